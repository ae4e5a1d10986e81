package fieldpath

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseRoundTrip(t *testing.T) {
	for _, s := range []string{
		"a", "image.repository", "spec.template.spec.containers[0].image",
		`metadata.annotations["prometheus.io/scrape"]`, `a["x]y"].b`, "env[-]", `["a.b"]`,
	} {
		p, err := Parse(s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if p.String() != s {
			t.Errorf("%s formats as %s", s, p)
		}
	}
	p := MustParse(`a['k.1'][2]`)
	want := Path{{Key: "a"}, {Key: "k.1"}, {IsList: true, Index: 2}}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("got %#v", p)
	}
}

func TestParseErrors(t *testing.T) {
	for _, s := range []string{"", "a..b", ".a", "a.", "a[", "a[x]", "a[-1]", `a["x]`, "a[-].b", `a"b`, "a]b", strings.Repeat("a", MaxLength+1)} {
		if _, err := Parse(s); err == nil {
			t.Errorf("%q parsed", s)
		}
	}
}

func TestSetGet(t *testing.T) {
	root := map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "a"}}}, "s": "x"}
	for path, v := range map[string]any{
		"spec.containers[0].image":  "img",
		"metadata.labels[\"a/b\"]":  "c",
		"spec.containers[0].env[-]": map[string]any{"name": "E"},
	} {
		if err := Set(root, MustParse(path), v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		got, ok := Get(root, MustParse(strings.Replace(path, "[-]", "[0]", 1)))
		if !ok || !reflect.DeepEqual(got, v) {
			t.Errorf("%s: got %v", path, got)
		}
	}
	for path, want := range map[string]string{
		"spec.containers[3].image": "index 3 is out of range",
		"s.x":                      "s is a string, not a map",
		"spec[0]":                  "spec is a map, not a list",
		"[0]":                      "root is a map",
	} {
		err := Set(root, MustParse(path), 1)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", path, err, want)
		}
	}
}

// AppendKey spells what String spells for the path with the key appended.
func TestAppendKeySpellsLikeString(t *testing.T) {
	for _, p := range []Path{nil, Key("a"), Key("a").Index(2), Key("x.y"), Key("a", "b")} {
		for _, k := range []string{"c", "d.e", "with space", "", "q\"uote", "[0]"} {
			if got, want := AppendKey(p.String(), k), p.Child(k).String(); got != want {
				t.Errorf("AppendKey(%q, %q) = %q, want %q", p.String(), k, got, want)
			}
		}
	}
}
