package generator_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/generator"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
)

// What the ApplicationSet's status shows names a CTF relative to the
// generator's CTF directory, never its absolute path, and a version that
// does not match says so in plain words.
func TestMessagesNameCTFsRelativeToTheirDirectory(t *testing.T) {
	root := filepath.Join(t.TempDir(), "ctfs")
	if err := registrytest.CopyDir(demoCTF(t), filepath.Join(root, "team-a", "demo")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "junk.tgz"), []byte("not a ctf"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Configured through a symbolic link: neither form of the root shows.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	url := serve(t, (*fixture)(nil).generator(t, generator.Options{CTFRoots: []string{link}}))
	for _, tc := range []struct {
		params map[string]any
		want   string
	}{
		{map[string]any{"repository": "junk.tgz", "component": "a.org/b"}, "repository junk.tgz: invalid input: not a CTF or component archive"},
		{map[string]any{"repository": "empty", "component": "a.org/b"}, "repository empty: invalid input: neither a CTF"},
		{map[string]any{"repository": "team-a/demo", "component": "a.org/b"}, "component a.org/b not found in team-a/demo"},
		{map[string]any{"repository": link + "/team-a/demo", "component": "a.org/b"}, "component a.org/b not found in team-a/demo"},
		{map[string]any{"repository": "team-a/demo", "component": "example.com/demo/podinfo", "version": "~9"},
			`no version of example.com/demo/podinfo matches "~9" (available: 1.0.0, 1.1.0+build.7)`},
		{map[string]any{"repository": "team-a/demo", "component": "example.com/demo/podinfo", "version": "1.2.3", "semverFilter": "^1"},
			`no version of example.com/demo/podinfo matches "1.2.3" and matches semverFilter "^1" (available: 1.0.0, 1.1.0+build.7)`},
		{map[string]any{"repository": "team-a/demo", "component": "example.com/demo/*", "version": "~9"},
			`(4 components; the first: no version of example.com/demo/catalog matches "~9" (available: 2.3.0))`},
	} {
		r := call(t, url, tc.params)
		msg := r.message(t)
		if r.status != http.StatusBadRequest || !strings.Contains(msg, tc.want) {
			t.Errorf("%v: %d %q, want 400 with %q", tc.params, r.status, msg, tc.want)
		}
		for _, p := range []string{root, link, "[redacted]", "not found (available"} {
			if strings.Contains(msg, p) {
				t.Errorf("%v: %q names %q", tc.params, msg, p)
			}
		}
	}
}
