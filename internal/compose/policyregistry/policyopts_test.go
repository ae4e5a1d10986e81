package policyregistry_test

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/compose/policyregistry"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/imageref"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/registry"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/policy"
)

const (
	head  = "apiVersion: argocd-ocm-plugin.io/v1alpha1\nkind: SidecarPolicy\ncredentials:\n- {name: m, host: harbor.example, pathPrefix: ghcr-proxy, env: M}\n- {name: up, host: ghcr.io, env: UP}\n"
	rules = "rules:\n- projects: [a]\n  repositories: [{host: ghcr.io, pathPrefix: acme/a}]\n  credentials: [up]\ndefault:\n  repositories: []\n"
)

func parse(t *testing.T, doc string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse([]byte(doc), "test")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Every rule of a policy with mirrors gets one mirror option more than the
// same rule of a policy without.
func TestForAddsThePolicysMirrors(t *testing.T) {
	plain := parse(t, head+rules)
	mirrored := parse(t, head+"mirrors:\n- upstream: ghcr.io\n  endpoints: [{host: harbor.example, pathPrefix: ghcr-proxy, credential: m}]\n"+rules)
	none := func(string) (string, bool) { return "", false }
	for _, project := range []string{"a", "other"} {
		n, m := len(policyregistry.For(mirrored.Rule(project), none)), len(policyregistry.For(plain.Rule(project), none))
		if n != m+1 {
			t.Errorf("%s: %d registry options, %d without mirrors: the mirror option is missing", project, n, m)
		}
	}
}

// The rule without a policy (any repository, the sidecar's credentials)
// needs no gate: the address refusal, and its plain-HTTP hosts.
func TestForLegacyRule(t *testing.T) {
	r := policy.Legacy(func(string) string { return "" }, "")
	if opts := policyregistry.For(r, nil); len(opts) != 1 {
		t.Errorf("%d options for the rule without a policy, want the address refusal only", len(opts))
	}
	r.PlainHTTP = []string{"localhost:5000"}
	if opts := policyregistry.For(r, nil); len(opts) != 2 {
		t.Errorf("%d options with one plain-HTTP host, want 2", len(opts))
	}
}

// Without a policy, an Application cannot make the sidecar connect to the
// loopback (by address or by name); the operator's allowance, a plain-HTTP
// host it named, or an exact host of a policy's rule lets it.
func TestForRefusesSpecialAddresses(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var conns atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			c.Close()
		}
	}()
	addr := l.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	try := func(r *policy.Rule, host string) error {
		c, err := registry.NewClient(append(policyregistry.For(r, nil), registry.WithRetries(0), registry.WithoutDockerConfig())...)
		if err != nil {
			t.Fatal(err)
		}
		ref := imageref.Reference{Registry: host, Repository: "x", Tag: "v"}
		repo, err := c.Repository(ref)
		if err != nil {
			return err
		}
		_, err = repo.Resolve(context.Background(), "v")
		return c.Wrap(err, "resolve", ref)
	}
	legacy := func(env map[string]string) *policy.Rule {
		return policy.Legacy(func(k string) string { return env[k] }, "")
	}
	for _, host := range []string{addr, "localhost:" + port} {
		if err := try(legacy(nil), host); !errors.Is(err, errdef.ErrForbidden) {
			t.Errorf("%s without an allowance: %v, want refused", host, err)
		}
	}
	if conns.Load() != 0 {
		t.Fatalf("%d connections to the loopback without an allowance", conns.Load())
	}
	for name, r := range map[string]*policy.Rule{
		"ARGOCD_OCM_ALLOW_ADDRESSES":  legacy(map[string]string{policy.EnvAllowAddresses: "10.0.0.0/8, 127.0.0.0/8"}),
		"ARGOCD_OCM_PLAIN_HTTP":       legacy(map[string]string{policy.EnvPlainHTTP: addr}),
		"an exact host of the policy": {Name: "r", Repositories: []policy.RepositoryPattern{{Host: addr}}, StrictPlainHTTP: true},
	} {
		before := conns.Load()
		if err := try(r, addr); errors.Is(err, errdef.ErrForbidden) || conns.Load() == before {
			t.Errorf("allowed by %s: %v (%d connections)", name, err, conns.Load()-before)
		}
	}
}
