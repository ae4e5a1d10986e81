package main

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/registry"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/examples"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
)

const policySecret = "pOl1cy-S3cret-never-shown"

// cli runs the command line in a re-executed test binary (see
// TestCLIHelperProcess), so that whatever the process writes, log lines of
// any package included, is in stdout and stderr.
func cli(t *testing.T, args []string, env ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCLIHelperProcess$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), cliHelperEnv+"="+strings.Join(args, "\x1f"),
		"ARGOCD_OCM_CACHE_DIR="+t.TempDir(), "DOCKER_CONFIG="+t.TempDir()), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

// refused checks the failure contract: non-zero exit, empty stdout, one
// stderr line, no credential anywhere.
func refused(t *testing.T, stdout, stderr string, code int, want ...string) {
	t.Helper()
	if code == 0 {
		t.Fatalf("exit 0; stdout %q", stdout)
	}
	if stdout != "" {
		t.Errorf("stdout not empty: %q", stdout)
	}
	if strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "argocd-ocm-plugin: ") {
		t.Errorf("stderr is not one line: %q", stderr)
	}
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr %q lacks %q", stderr, w)
		}
	}
	noSecret(t, stdout+stderr)
}

func noSecret(t *testing.T, s string) {
	t.Helper()
	b64 := base64.StdEncoding.EncodeToString([]byte("ocm:" + policySecret))
	// Prefixes too: a cut credential still gives the user and a part of the password away.
	for _, bad := range []string{policySecret[:8], b64[:12]} {
		if strings.Contains(s, bad) {
			t.Fatalf("output holds %q: %s", bad, s)
		}
	}
}

func generateEnv(project, repository string) []string {
	e := []string{"ARGOCD_APP_NAME=shop", "ARGOCD_APP_NAMESPACE=shop",
		"ARGOCD_ENV_REPOSITORY=" + repository, "ARGOCD_ENV_COMPONENT=" + examples.Podinfo, "ARGOCD_ENV_VERSION=1.0.0"}
	if project != "" {
		e = append(e, "ARGOCD_APP_PROJECT_NAME="+project)
	}
	return e
}

// TestGeneratePolicyPerProject: one policy, three projects, through the
// real generate command. A refused repository is refused before any
// connection, with one error text whatever listens at the target.
func TestGeneratePolicyPerProject(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	comps, err := examples.Demo("../../testdata/src")
	if err != nil {
		t.Fatal(err)
	}
	var authHeaders sync.Map
	reg := registrytest.Start(t, registrytest.WithBasicAuth("ocm", policySecret), registrytest.WithMiddleware(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if a := r.Header.Get("Authorization"); a != "" && r.Method == http.MethodGet {
				authHeaders.Store(r.URL.Path, a)
			}
			next.ServeHTTP(w, r)
		})
	}))
	reg.Push(t, "ocm", comps...)
	reg.Reset()
	banner, bannerN := registrytest.CountingListener(t, "banner")
	tlsHost, tlsN := registrytest.CountingListener(t, "tls")
	closedL, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := closedL.Addr().String()
	closedL.Close()

	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	os.WriteFile(pol, []byte(fmt.Sprintf(`apiVersion: argocd-ocm-plugin.io/v1alpha1
kind: SidecarPolicy
credentials:
- {name: b, host: %q, pathPrefix: ocm, env: TEAM_B}
rules:
- name: team-a
  projects: ["team-a*"]
  repositories: [{host: ghcr.io, pathPrefix: team-a}]
- name: team-b
  projects: [team-b]
  repositories: [{host: %q, pathPrefix: ocm}]
  credentials: [b]
  plainHTTP: [%q]
- name: team-c
  projects: [team-c]
  repositories: [{host: %q, pathPrefix: ocm}]
  plainHTTP: [%q]
default:
  repositories: []
`, reg.Host, reg.Host, reg.Host, reg.Host, reg.Host)), 0o600)
	sidecar := []string{"ARGOCD_OCM_POLICY=" + pol, "ARGOCD_OCM_REGISTRY_TEAM_B_USERNAME=ocm", "ARGOCD_OCM_REGISTRY_TEAM_B_PASSWORD=" + policySecret,
		// The sidecar's general credentials for the host: the policy does not use them.
		"ARGOCD_OCM_REGISTRY_" + registry.EnvName(reg.Host) + "_USERNAME=ocm", "ARGOCD_OCM_REGISTRY_" + registry.EnvName(reg.Host) + "_PASSWORD=" + policySecret}

	t.Run("allowed project renders with its credential", func(t *testing.T) {
		stdout, stderr, code := cli(t, []string{"generate"}, append(sidecar, generateEnv("team-b", "http://"+reg.Host+"/ocm")...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if !strings.Contains(generated(t, []byte(stdout)), "kind: Deployment") {
			t.Errorf("no Deployment:\n%s", stdout)
		}
		noSecret(t, stdout+stderr)
	})
	t.Run("allowed repository without a credential gets none", func(t *testing.T) {
		authHeaders.Clear()
		reg.Reset()
		stdout, stderr, code := cli(t, []string{"generate"}, append(sidecar, generateEnv("team-c", "http://"+reg.Host+"/ocm")...)...)
		refused(t, stdout, stderr, code, "application shop", "HTTP 401", "sidecar policy names no credentials")
		if len(reg.Requests()) == 0 {
			t.Error("no request: the registry was not asked")
		}
		authHeaders.Range(func(k, v any) bool { t.Errorf("Authorization sent for %v", k); return true })
	})

	portRe := regexp.MustCompile(`127\.0\.0\.1:\d+`)
	var first string
	reg.Reset()
	for _, tc := range []struct{ project, repository string }{
		{"team-a", "http://" + banner + "/x"},
		{"team-a", "http://" + closed + "/x"},
		{"team-a", "https://" + tlsHost + "/x"},
		{"team-a", tlsHost + "/x"},
		{"team-a", "http://" + reg.Host + "/x"},
		{"team-a-dev", "oci://" + closed + "/x"},
		{"team-a", `{type: OCIRegistry, baseUrl: "http://` + banner + `", subPath: x}`},
		{"team-a", "OCIRegistry::" + closed + "/x"},
		{"other", "http://" + banner + "/x"}, // the default rule
		{"", "http://" + closed + "/x"},      // no project: the default rule
	} {
		t.Run("refused "+tc.project+" "+tc.repository, func(t *testing.T) {
			stdout, stderr, code := cli(t, []string{"generate"}, append(sidecar, generateEnv(tc.project, tc.repository)...)...)
			refused(t, stdout, stderr, code, "application shop", "refused by the sidecar policy")
			msg := portRe.ReplaceAllString(stderr, "127.0.0.1:PORT")
			msg = regexp.MustCompile(`project "[^"]*" \(rule [^)]*\)`).ReplaceAllString(msg, "project P")
			msg = strings.NewReplacer("https://", "", "http://", "", "oci://", "").Replace(msg)
			if first == "" {
				first = msg
			} else if msg != first {
				t.Errorf("the refusal depends on the target:\n%s\n%s", first, msg)
			}
		})
	}
	if n := bannerN.Load() + tlsN.Load(); n != 0 || len(reg.Requests()) != 0 {
		t.Fatalf("refused repositories were connected to: %d connections, %d registry requests", n, len(reg.Requests()))
	}
	t.Run("parameters under the policy", func(t *testing.T) {
		stdout, stderr, code := cli(t, []string{"parameters"}, append(sidecar, generateEnv("team-b", "http://"+reg.Host+"/ocm")...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		noSecret(t, stdout+stderr)
	})
	t.Run("broken policy fails closed", func(t *testing.T) {
		bad := filepath.Join(dir, "bad.yaml")
		os.WriteFile(bad, []byte("apiVersion: argocd-ocm-plugin.io/v1alpha1\nkind: SidecarPolicy\ndefualt: {}\n"), 0o600)
		stdout, stderr, code := cli(t, []string{"generate"}, append([]string{"ARGOCD_OCM_POLICY=" + bad}, generateEnv("team-b", "http://"+reg.Host+"/ocm")...)...)
		refused(t, stdout, stderr, code, "sidecar policy", "unknown field")
	})
}

// TestGenerateKeepsCredentialsFromHostileRegistries: without a policy, through
// generate and parameters: a registry echoing Authorization, and an http://
// URL to a credentialed host the operator did not allow for plain HTTP.
func TestGenerateKeepsCredentialsFromHostileRegistries(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := r.Header.Get("Authorization")
		if a == "" {
			w.Header().Set("WWW-Authenticate", `Basic realm="echo"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, `{"errors":[{"code":"DENIED","message":"you sent %s, that is %s","detail":%q}]}`, a, strings.TrimPrefix(a, "Basic "), a)
	}))
	defer echo.Close()
	host := strings.TrimPrefix(echo.URL, "http://")
	creds := []string{"ARGOCD_OCM_REGISTRY_" + registry.EnvName(host) + "_USERNAME=ocm", "ARGOCD_OCM_REGISTRY_" + registry.EnvName(host) + "_PASSWORD=" + policySecret}
	for _, cmd := range []string{"generate", "parameters"} {
		t.Run("echo "+cmd, func(t *testing.T) {
			stdout, stderr, code := cli(t, []string{cmd}, append(append(creds, "ARGOCD_OCM_PLAIN_HTTP="+host), generateEnv("", "http://"+host+"/ocm")...)...)
			if cmd == "generate" {
				refused(t, stdout, stderr, code, "HTTP 403", "denied")
			}
			noSecret(t, stdout+stderr)
		})
	}

	seen := &atomic.Int32{}
	reqs := &atomic.Int32{}
	comps, err := examples.Demo("../../testdata/src")
	if err != nil {
		t.Fatal(err)
	}
	reg := registrytest.Start(t, registrytest.WithBasicAuth("ocm", policySecret), registrytest.WithMiddleware(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet {
				reqs.Add(1)
				if r.Header.Get("Authorization") != "" {
					seen.Add(1)
				}
			}
			next.ServeHTTP(w, r)
		})
	}))
	reg.Push(t, "ocm", comps...)
	regCreds := []string{"ARGOCD_OCM_REGISTRY_" + registry.EnvName(reg.Host) + "_USERNAME=ocm", "ARGOCD_OCM_REGISTRY_" + registry.EnvName(reg.Host) + "_PASSWORD=" + policySecret}
	t.Run("plain HTTP without allowance sends no credentials", func(t *testing.T) {
		stdout, stderr, code := cli(t, []string{"generate"}, append(append(regCreds, "ARGOCD_OCM_ALLOW_ADDRESSES=127.0.0.1"), generateEnv("", "http://"+reg.Host+"/ocm")...)...)
		refused(t, stdout, stderr, code, "HTTP 401", "no credentials are sent over plain HTTP")
		if reqs.Load() == 0 || seen.Load() != 0 {
			t.Fatalf("%d requests, %d with Authorization", reqs.Load(), seen.Load())
		}
	})
	t.Run("plain HTTP the operator allowed", func(t *testing.T) {
		stdout, stderr, code := cli(t, []string{"generate"}, append(append(regCreds, "ARGOCD_OCM_PLAIN_HTTP="+reg.Host), generateEnv("", "http://"+reg.Host+"/ocm")...)...)
		if code != 0 || seen.Load() == 0 {
			t.Fatalf("exit %d (%d authorised requests): %s", code, seen.Load(), stderr)
		}
		noSecret(t, stdout+stderr)
	})
}

// TestGenerateKeepsHTTPClientLogsOffStderr: a registry that writes bytes on
// an idle keep-alive connection makes Go's transport log "Unsolicited
// response received on idle HTTP channel starting with …" (quoting them)
// through the standard log package. generate discards that logger: stderr
// stays the one error line, and the bytes (here a credential) never show.
func TestGenerateKeepsHTTPClientLogsOffStderr(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var unsolicited atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				buf := make([]byte, 4096)
				for {
					if _, err := c.Read(buf); err != nil {
						return
					}
					// A complete 503 (retried after a backoff), then, while the
					// connection idles in the client's pool, more bytes.
					io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
					time.Sleep(20 * time.Millisecond)
					io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Leak: "+policySecret+"\r\n\r\n")
					unsolicited.Add(1)
				}
			}(c)
		}
	}()
	host := l.Addr().String()
	stdout, stderr, code := cli(t, []string{"generate"}, append([]string{"ARGOCD_OCM_PLAIN_HTTP=" + host}, generateEnv("", "http://"+host+"/ocm")...)...)
	if unsolicited.Load() == 0 {
		t.Fatal("the server never wrote its unsolicited bytes: the test proves nothing")
	}
	refused(t, stdout, stderr, code, "HTTP 503")
	if strings.Contains(stderr, "Unsolicited") {
		t.Fatalf("net/http's log reached stderr: %s", stderr)
	}
}

// A confined generation opens the Application's CTF itself (package
// confine), not through the registry source: the policy's localArchives
// must still be asked first, by generate and by parameters.
func TestPolicyLocalArchivesInTheApplicationDirectory(t *testing.T) {
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(pol, []byte(`apiVersion: argocd-ocm-plugin.io/v1alpha1
kind: SidecarPolicy
rules:
- name: team-b
  projects: [team-b]
  localArchives: true
default:
  localArchives: false
`), 0o600); err != nil {
		t.Fatal(err)
	}
	repo := inAppDir(t, demoRepo)
	for _, cmd := range []string{"generate", "parameters"} {
		for _, project := range []string{"team-a", ""} {
			e := map[string]string{"ARGOCD_OCM_POLICY": pol}
			for _, kv := range generateEnv(project, repo) {
				k, v, _ := strings.Cut(kv, "=")
				e[k] = v
			}
			var stdout, stderr bytes.Buffer
			code := run([]string{cmd}, &stdout, &stderr, env(e))
			refused(t, stdout.String(), stderr.String(), code, "local CTFs and component archives are not allowed")
		}
		e := map[string]string{"ARGOCD_OCM_POLICY": pol}
		for _, kv := range generateEnv("team-b", repo) {
			k, v, _ := strings.Cut(kv, "=")
			e[k] = v
		}
		var stdout, stderr bytes.Buffer
		if code := run([]string{cmd}, &stdout, &stderr, env(e)); code != 0 || stdout.Len() == 0 {
			t.Errorf("%s, team-b: exit %d: %s", cmd, code, stderr.String())
		}
	}
}

// A misspelt parameter or plugin variable fails the generation with the
// known names, instead of rendering without it.
func TestGenerateRefusesUnknownNames(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	dir := appDir(t)
	gen := func(extra ...string) (string, string, int) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCLIHelperProcess$", "-test.count=1")
		cmd.Dir = dir
		cmd.Env = append(append(os.Environ(), cliHelperEnv+"=generate", "ARGOCD_OCM_CACHE_DIR="+t.TempDir(),
			"ARGOCD_APP_NAME=shop", "ARGOCD_APP_NAMESPACE=shop", "ARGOCD_ENV_REPOSITORY=ctf",
			"ARGOCD_ENV_COMPONENT="+examples.Podinfo, "ARGOCD_ENV_VERSION=1.0.0"), extra...)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return o.String(), e.String(), code
	}
	stdout, stderr, code := gen(`ARGOCD_APP_PARAMETERS=[{"name":"valuess","string":"replicaCount: 3"}]`)
	refused(t, stdout, stderr, code, "application shop", `unknown parameter "valuess", did you mean "values"?`)
	stdout, stderr, code = gen("ARGOCD_ENV_VALUESS=replicaCount: 3")
	refused(t, stdout, stderr, code, `unknown plugin environment variable "ARGOCD_ENV_VALUESS", did you mean "ARGOCD_ENV_VALUES"?`)
	if stdout, stderr, code = gen(`ARGOCD_APP_PARAMETERS=[{"name":"values","string":"replicaCount: 3"}]`); code != 0 || !strings.Contains(stdout, `"replicas":3`) {
		t.Errorf("the right name: exit %d, %s", code, stderr)
	}
}
