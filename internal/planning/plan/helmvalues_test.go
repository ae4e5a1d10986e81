package plan_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/application"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/plan"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/param"
)

// The --set family layers in Helm's order (pkg/cli/values.Options.MergeValues):
// files, --set-json, --set, --set-string, --set-file; each later one wins.
func TestHelmValuesSetFamilyOrder(t *testing.T) {
	dir := t.TempDir()
	vf := filepath.Join(dir, "values.yaml")
	note := filepath.Join(dir, "note.txt")
	if err := os.WriteFile(vf, []byte("a: file\nb: file\nc: file\nd: file\ne: file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(note, []byte("line 1\nline 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	req := application.Request{
		ValueFiles: []string{vf},
		SetJSON:    []string{`b={"x":[1,2]}`, `c=1`, `d=1`, `e=1`, `j=[true,null]`},
		Set:        []string{"c=2", "d=2", "e=2"},
		SetString:  []string{"d=3", "e=3", "s=5"},
		SetFile:    []string{"e=" + note},
	}
	got, err := helmValues(req)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"a": "file",
		"b": map[string]any{"x": []any{float64(1), float64(2)}},
		"c": int64(2),
		"d": "3",
		"e": "line 1\nline 2\n",
		"j": []any{true, nil},
		"s": "5",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %#v\nwant %#v", got, want)
	}
}

func TestHelmValuesSetFamilyMistakes(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		req     application.Request
		mention string
	}{
		{"json", application.Request{SetJSON: []string{"a={x"}}, `--set-json "a={x"`},
		// Helm 4 ignores an index it cannot close ("a[=b"), not one it cannot read.
		{"string", application.Request{SetString: []string{"a[x]=b"}}, `--set-string "a[x]=b"`},
		{"missing file", application.Request{SetFile: []string{"a=" + filepath.Join(dir, "none.txt")}}, `none.txt": invalid input: no such file`},
		{"directory", application.Request{SetFile: []string{"a=" + dir}}, "not a regular file"},
		{"long", application.Request{SetString: []string{strings.Repeat("x", 5000) + "[x]=b"}}, "(5005 bytes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := helmValues(tc.req)
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if !errors.Is(err, errdef.ErrInvalidInput) || !strings.Contains(msg, tc.mention) || strings.Contains(msg, "\n") {
				t.Fatalf("error %q: want invalid input, one line, mentioning %q", msg, tc.mention)
			}
			if strings.Count(msg, "none.txt") > 1 || len(msg) > 1000 {
				t.Fatalf("error %q repeats the path or is not capped", msg)
			}
		})
	}
}

// helmValues layers req's values as a planner does, its files read through
// the request.
func helmValues(req application.Request) (map[string]any, error) {
	return plan.HelmValues(plan.Input{Request: req}, func(name string) ([]byte, error) { return req.ReadFile(param.ValueFiles, name) })
}
