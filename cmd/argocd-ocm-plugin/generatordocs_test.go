package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// docs/applicationset.md's flag table and `generator --help` agree: every
// flag it lists exists, a default it states is the flag's, and the TTLs say
// alike that 0 or a negative value turns
// the cache off (buildGenerator turns a 0 flag into -1).
func TestGeneratorHelpAndDocsAgree(t *testing.T) {
	b, err := os.ReadFile("../../docs/applicationset.md")
	if err != nil {
		t.Fatal(err)
	}
	c := newGeneratorCommand(nil, env(nil), nil)
	row := regexp.MustCompile("(?m)^\\| `(--[a-z-]+)`[^|]*\\| (.*) \\|$")
	def := regexp.MustCompile("default `([^`]+)`")
	seen := 0
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		f := c.Flags().Lookup(strings.TrimPrefix(m[1], "--"))
		if f == nil {
			if strings.Contains(m[0], "generator") || seen > 0 {
				t.Errorf("docs list %s, which generator does not have", m[1])
			}
			continue
		}
		seen++
		if d := def.FindStringSubmatch(m[2]); d != nil {
			want, werr := time.ParseDuration(d[1])
			got, gerr := time.ParseDuration(f.DefValue)
			if (werr == nil && gerr == nil && want != got) || ((werr != nil || gerr != nil) && d[1] != f.DefValue) {
				t.Errorf("%s: docs say default %s, the flag's is %s", m[1], d[1], f.DefValue)
			}
		}
		if strings.HasSuffix(m[1], "-ttl") {
			if !strings.Contains(m[2], "`0` or negative: not at all") || !strings.Contains(f.Usage, "0 or negative: not at all") {
				t.Errorf("%s: docs %q and help %q disagree on turning the cache off", m[1], m[2], f.Usage)
			}
		}
	}
	if seen < 8 {
		t.Errorf("found %d of the generator's flags in the docs' table", seen)
	}
}
