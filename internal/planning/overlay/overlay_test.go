package overlay_test

import (
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/overlay"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/kustomize"
)

// Text puts each origin on its entry as one comment line, whatever it
// holds (a file name of a tree may hold a newline and YAML): the text is
// still the same kustomization, and every entry Entries names can carry one.
func TestTextOrigins(t *testing.T) {
	ov := &kustomize.Overlay{
		Namespace:         "shop",
		CommonAnnotations: map[string]string{"example.com/team": "payments"},
		Images:            []types.Image{{Name: "a", NewTag: "1"}, {Name: "b", NewTag: "2"}},
		Components:        []string{"components/ha"},
	}
	origins := overlay.Origins{}
	for _, e := range overlay.Entries(ov) {
		origins[e.String()] = "from " + e.String() + "\n---\nkind: Secret\r\x1b[2J"
	}
	text := overlay.Text(ov, "<resource>/.", origins)
	plain := overlay.Text(ov, "<resource>/.", nil)
	var got, want map[string]any
	if err := yaml.Unmarshal([]byte(text), &got); err != nil {
		t.Fatalf("%v:\n%s", err, text)
	}
	if err := yaml.Unmarshal([]byte(plain), &want); err != nil {
		t.Fatal(err)
	}
	if g, w := must(yaml.Marshal(got)), must(yaml.Marshal(want)); g != w {
		t.Errorf("with origins:\n%s\nwithout:\n%s", g, w)
	}
	for _, e := range []string{"namespace", `commonAnnotations["example.com/team"]`, "images[0]", "images[1]", "components[0]"} {
		if !strings.Contains(text, "# from "+e+" --- kind: Secret") {
			t.Errorf("no one-line comment for %s:\n%s", e, text)
		}
	}
	if strings.ContainsAny(text, "\r\x1b") || strings.Contains(text, "\n---") {
		t.Errorf("control characters or a document separator in:\n%q", text)
	}
}

func must(b []byte, err error) string {
	if err != nil {
		panic(err)
	}
	return string(b)
}
