package main

import (
	"net"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
)

// The sidecar without a policy, as the README installs it: an Application
// cannot make generate connect to the pod's own loopback (where Argo CD's
// repo-server ports listen), by address or by a name resolving there; the
// error line is the same whatever listens and names no banner. The
// operator's ARGOCD_OCM_ALLOW_ADDRESSES opens it; render, run by a person,
// is not restricted.
func TestGenerateRefusesTheLoopbackByDefault(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	banner, conns := registrytest.CountingListener(t, "banner")
	tlsHost, tlsConns := registrytest.CountingListener(t, "tls")
	_, port, _ := net.SplitHostPort(banner)
	var lines []string
	for _, repo := range []string{"http://" + banner + "/x", "localhost:" + port + "/x", "https://" + tlsHost + "/x"} {
		stdout, stderr, code := cli(t, []string{"generate"}, generateEnv("", repo)...)
		refused(t, stdout, stderr, code, "connection refused by the sidecar", "ARGOCD_OCM_ALLOW_ADDRESSES")
		if strings.Contains(stderr, "SSH") || strings.Contains(stderr, "banner") {
			t.Errorf("%s: the error quotes what listens: %q", repo, stderr)
		}
		host := strings.SplitN(strings.TrimPrefix(strings.TrimPrefix(repo, "http://"), "https://"), "/", 2)[0]
		lines = append(lines, strings.ReplaceAll(stderr, host, "HOST"))
	}
	if n := conns.Load() + tlsConns.Load(); n != 0 {
		t.Fatalf("%d connections to the loopback without the operator's allowance", n)
	}
	if lines[0] != lines[1] || lines[0] != lines[2] {
		t.Errorf("refusals differ by what listens:\n%s%s%s", lines[0], lines[1], lines[2])
	}
	stdout, stderr, code := cli(t, []string{"generate"}, append(generateEnv("", "http://"+banner+"/x"), "ARGOCD_OCM_ALLOW_ADDRESSES=127.0.0.0/8")...)
	refused(t, stdout, stderr, code, "no OCI registry answered")
	if conns.Load() == 0 {
		t.Error("the operator's allowance made no connection")
	}
	before := conns.Load()
	stdout, stderr, code = cli(t, []string{"render", "--repository", "http://" + banner + "/x", "--component", "example.com/demo/podinfo", "--version", "1.0.0"})
	refused(t, stdout, stderr, code, "no OCI registry answered")
	if conns.Load() == before {
		t.Error("render (a person's command) did not connect")
	}
}

// The pod's own interface addresses (IPv4 and IPv6), where the repo-server's
// ports listen as on the loopback, are refused alike (issue 35: they were
// dialled), with the loopback's refusal, unless the operator allows them.
func TestGenerateRefusesThePodsOwnAddresses(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	for _, o := range registrytest.OwnAddresses(t) {
		repo := "http://" + o.Addr + "/x"
		stdout, stderr, code := cli(t, []string{"generate"}, generateEnv("", repo)...)
		refused(t, stdout, stderr, code, "connection refused by the sidecar", "local interface address", "ARGOCD_OCM_ALLOW_ADDRESSES")
		if n := o.Accepted.Load(); n != 0 {
			t.Errorf("%s: %d connections without the operator's allowance", repo, n)
		}
		stdout, stderr, code = cli(t, []string{"generate"}, append(generateEnv("", repo), "ARGOCD_OCM_ALLOW_ADDRESSES="+o.IP.String())...)
		refused(t, stdout, stderr, code, "no OCI registry answered")
		if o.Accepted.Load() == 0 {
			t.Errorf("%s: the operator's allowance made no connection", repo)
		}
	}
}
