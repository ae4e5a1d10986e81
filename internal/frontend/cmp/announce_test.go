package cmp_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/cmp"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/param"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

const demoCTF = "../../../testdata/demo/ctf"

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func params(kv ...string) string {
	var ps []cmp.Parameter
	for i := 0; i+1 < len(kv); i += 2 {
		v := kv[i+1]
		ps = append(ps, cmp.Parameter{Name: kv[i], String: &v})
	}
	b, _ := json.Marshal(ps)
	return string(b)
}

func byName(t *testing.T, as []cmp.Announcement) map[string]cmp.Announcement {
	t.Helper()
	m := map[string]cmp.Announcement{}
	for _, a := range as {
		if _, dup := m[a.Name]; dup {
			t.Fatalf("%q announced twice", a.Name)
		}
		m[a.Name] = a
	}
	return m
}

func TestContractParametersAlwaysAnnounced(t *testing.T) {
	as, err := (&cmp.Announcer{}).Announce(context.Background(), envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	m := byName(t, as)
	for _, n := range []string{"repository", "component", "version", "resource", "path", "values", "value-files", "parameters",
		"definition", "platform", "platform-config", "localize", "provenance"} {
		a, ok := m[n]
		if !ok {
			t.Errorf("%q not announced", n)
			continue
		}
		if a.Title == "" || a.Tooltip == "" {
			t.Errorf("%q lacks a title or tooltip", n)
		}
	}
	if m["parameters"].CollectionType != "map" || m["value-files"].CollectionType != "array" {
		t.Errorf("collection types: parameters=%q value-files=%q", m["parameters"].CollectionType, m["value-files"].CollectionType)
	}
	if !m["repository"].Required || !m["component"].Required || !m["version"].Required {
		t.Error("repository, component and version must be required")
	}
	if _, ok := m[param.ResolvedVersion]; ok {
		t.Error("resolved-version announced without a component")
	}
}

func TestAnnounceComponent(t *testing.T) {
	for _, tc := range []struct {
		name         string
		env          map[string]string
		resource     string
		resolved     string
		versionHints []string
	}{
		{"parameters", map[string]string{"ARGOCD_APP_PARAMETERS": params("repository", demoCTF, "component", "example.com/demo/podinfo", "version", "1.0.0")},
			"chart", "1.0.0", nil},
		{"env fallback", map[string]string{"ARGOCD_ENV_REPOSITORY": demoCTF, "ARGOCD_ENV_COMPONENT": "example.com/demo/podinfo-extras", "ARGOCD_ENV_VERSION": "1.0.0"},
			"manifests", "1.0.0", nil},
		{"constraint", map[string]string{"ARGOCD_APP_PARAMETERS": params("repository", demoCTF, "component", "example.com/demo/podinfo", "version", "~1.0")},
			"chart", "1.0.0", []string{`"~1.0" resolves to 1.0.0`}},
		{"no version yet", map[string]string{"ARGOCD_APP_PARAMETERS": params("repository", demoCTF, "component", "example.com/demo/podinfo")},
			"", "", []string{"Available: 1.1.0+build.7, 1.0.0."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			as, err := (&cmp.Announcer{}).Announce(context.Background(), envOf(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			m := byName(t, as)
			if got := m["resource"].String; got != tc.resource {
				t.Errorf("resource default %q, want %q", got, tc.resource)
			}
			if tc.resource != "" && !strings.Contains(m["resource"].Tooltip, tc.resource+" (") {
				t.Errorf("resource tooltip %q does not list %q", m["resource"].Tooltip, tc.resource)
			}
			if got := m[param.ResolvedVersion].String; got != tc.resolved {
				t.Errorf("resolved version %q, want %q", got, tc.resolved)
			}
			for _, h := range tc.versionHints {
				if !strings.Contains(m["version"].Tooltip, h) {
					t.Errorf("version tooltip %q lacks %q", m["version"].Tooltip, h)
				}
			}
			if m["version"].String != "" {
				t.Error("version must not get a default: the UI could write it back and pin a constraint")
			}
		})
	}
}

// A platform component (references only) renders child Applications: the
// announcement says so instead of failing for want of a resource.
func TestAnnouncePlatform(t *testing.T) {
	as, err := (&cmp.Announcer{}).Announce(context.Background(), envOf(map[string]string{
		"ARGOCD_APP_PARAMETERS": params("repository", demoCTF, "component", "example.com/demo/platform", "version", "1.0.0")}))
	if err != nil {
		t.Fatal(err)
	}
	m := byName(t, as)
	if tip := m["resource"].Tooltip; !strings.Contains(tip, "rendered as a platform") || !strings.Contains(tip, "example.com/demo/podinfo:1.0.0") {
		t.Errorf("resource tooltip %q", tip)
	}
	if m["resource"].String != "" || m[param.ResolvedVersion].String != "1.0.0" {
		t.Errorf("resource %q resolved %q", m["resource"].String, m[param.ResolvedVersion].String)
	}
}

// The JSON is what Argo CD decodes into its ParameterAnnouncement.
func TestAnnouncementJSON(t *testing.T) {
	b, err := json.Marshal([]cmp.Announcement{{Name: "p", Title: "P", CollectionType: "map", Map: map[string]string{"a": "1"}, ItemType: "number", Required: true}})
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"name":"p","title":"P","required":true,"itemType":"number","collectionType":"map","map":{"a":"1"}}]`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

func TestParameterSource(t *testing.T) {
	var seen argocdocm.Request
	src := cmp.ParameterSourceFunc(func(_ context.Context, cv ocm.ComponentVersion, req argocdocm.Request) ([]cmp.Announcement, error) {
		seen = req
		return []cmp.Announcement{{Name: "replicas", Title: "Replicas", ItemType: "number", String: "2"}}, nil
	})
	env := envOf(map[string]string{"ARGOCD_APP_NAME": "shop",
		"ARGOCD_APP_PARAMETERS": params("repository", demoCTF, "component", "example.com/demo/podinfo", "version", ">=1.0.0 <1.1.0")})
	as, err := (&cmp.Announcer{Sources: []cmp.ParameterSource{src}}).Announce(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if last := as[len(as)-1]; last.Name != "replicas" || last.String != "2" {
		t.Errorf("source announcement not last: %+v", last)
	}
	if seen.Version != "1.0.0" || seen.Application != "shop" {
		t.Errorf("source saw version %q application %q, want resolved 1.0.0 and shop", seen.Version, seen.Application)
	}

	clash := cmp.ParameterSourceFunc(func(context.Context, ocm.ComponentVersion, argocdocm.Request) ([]cmp.Announcement, error) {
		return []cmp.Announcement{{Name: "version"}}, nil
	})
	if _, err := (&cmp.Announcer{Sources: []cmp.ParameterSource{clash}}).Announce(context.Background(), env); !errors.Is(err, errdef.ErrInvalidInput) {
		t.Errorf("a source reusing a plugin parameter name: err %v", err)
	}
}

func TestAnnounceErrorsNameTheApplication(t *testing.T) {
	for _, tc := range []struct {
		name     string
		env      map[string]string
		mentions []string
	}{
		{"unknown version", map[string]string{"ARGOCD_APP_NAME": "shop",
			"ARGOCD_APP_PARAMETERS": params("repository", demoCTF, "component", "example.com/demo/podinfo", "version", "9.9.9")},
			[]string{"application shop", "component example.com/demo/podinfo:9.9.9", "available: 1.0.0"}},
		{"unknown resource", map[string]string{"ARGOCD_APP_NAME": "shop",
			"ARGOCD_APP_PARAMETERS": params("repository", demoCTF, "component", "example.com/demo/podinfo", "version", "1.0.0", "resource", "nope")},
			[]string{"application shop", "example.com/demo/podinfo:1.0.0", "nope"}},
		{"resource of a platform", map[string]string{"ARGOCD_APP_NAME": "shop",
			"ARGOCD_APP_PARAMETERS": params("repository", demoCTF, "component", "example.com/demo/platform", "version", "1.0.0", "resource", "chart")},
			[]string{"application shop", "example.com/demo/platform:1.0.0", "chart"}},
		{"bad parameters", map[string]string{"ARGOCD_APP_NAME": "shop", "ARGOCD_APP_PARAMETERS": "{"},
			[]string{"application shop", "ARGOCD_APP_PARAMETERS"}},
		{"missing repository", map[string]string{"ARGOCD_APP_NAME": "shop",
			"ARGOCD_APP_PARAMETERS": params("repository", "does-not-exist", "component", "example.com/demo/podinfo", "version", "1.0.0")},
			[]string{"application shop", "example.com/demo/podinfo:1.0.0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			as, err := (&cmp.Announcer{}).Announce(context.Background(), envOf(tc.env))
			if err == nil {
				t.Fatalf("no error; announced %d parameters", len(as))
			}
			if as != nil {
				t.Error("announcements returned with an error")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("multi-line error %q", msg)
			}
			for _, m := range tc.mentions {
				if !strings.Contains(msg, m) {
					t.Errorf("error %q lacks %q", msg, m)
				}
			}
		})
	}
}

// A component whose references carry a kro RGD that renders it (OCM's
// helm-nested example) is announced as the render treats it: not a
// platform of child Applications.
func TestAnnounceComponentRenderedByReferencedRGD(t *testing.T) {
	const ctf = "../../../testdata/ocm-examples/helm-nested/ctf"
	as, err := (&cmp.Announcer{}).Announce(context.Background(), envOf(map[string]string{
		"ARGOCD_APP_PARAMETERS": params("repository", ctf, "component", "ocm.software/ocm-k8s-toolkit/examples/helm-nested", "version", "1.0.0")}))
	if err != nil {
		t.Fatal(err)
	}
	m := byName(t, as)
	if strings.Contains(m["platform"].Tooltip, "Rendering as a platform now") || strings.Contains(m["resource"].Tooltip, "rendered as a platform") {
		t.Errorf("announced as a platform, but the referenced RGD renders it: %q / %q", m["platform"].Tooltip, m["resource"].Tooltip)
	}
	// The same component forced to a platform is announced as one.
	as, err = (&cmp.Announcer{}).Announce(context.Background(), envOf(map[string]string{
		"ARGOCD_APP_PARAMETERS": params("repository", ctf, "component", "ocm.software/ocm-k8s-toolkit/examples/helm-nested", "version", "1.0.0", "platform", "true")}))
	if err != nil {
		t.Fatal(err)
	}
	if m := byName(t, as); !strings.Contains(m["platform"].Tooltip, "Rendering as a platform now") {
		t.Errorf("forced platform not announced: %q", m["platform"].Tooltip)
	}
}
