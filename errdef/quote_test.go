package errdef_test

import (
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

func TestQuoteCutsWithSize(t *testing.T) {
	if got := errdef.Quote("1.0.0"); got != `"1.0.0"` {
		t.Errorf("Quote(short) = %s", got)
	}
	got := errdef.Quote(strings.Repeat("a", 90_000))
	if want := `"` + strings.Repeat("a", errdef.MaxQuoted) + `…" (90000 bytes)`; got != want {
		t.Errorf("Quote(90000 bytes) = %.80s… (%d bytes)", got, len(got))
	}
	// A cut never splits a rune.
	if got := errdef.Quote(strings.Repeat("é", 200)); !strings.HasSuffix(got, `…" (400 bytes)`) || strings.Contains(got, `\x`) {
		t.Errorf("Quote(runes) = %s", got)
	}
}

// The context fields are tenants' input: short ones read as they are,
// overlong or unprintable ones are quoted and cut.
func TestErrorCutsOverlongFields(t *testing.T) {
	e := &errdef.Error{Application: "shop", Component: strings.Repeat("c", 60_000), Version: strings.Repeat("v", 90_000),
		Resource: "chart\nforged line", Err: errdef.ErrNotFound}
	msg := e.Error()
	if len(msg) > 1024 || strings.Contains(msg, "\n") {
		t.Fatalf("message is %d bytes: %.200q", len(msg), msg)
	}
	for _, want := range []string{"application shop: ", "(60000 bytes):", "(90000 bytes): ", `resource "chart\nforged line": not found`} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q lacks %q", msg, want)
		}
	}
	if got := (&errdef.Error{Component: "example.com/a", Version: "1.0.0", Err: errdef.ErrNotFound}).Error(); got != "component example.com/a:1.0.0: not found" {
		t.Errorf("short fields: %q", got)
	}
}

// A field reads unquoted only when Quote would show it as it is: a line
// or paragraph separator, NEL, a C1 control or a bidi override in a name
// would split or reorder the error line in a log viewer.
func TestFieldQuotesWhatQuoteEscapes(t *testing.T) {
	for _, s := range []string{"a\nb", "a\x7fb", "a\u0085b", "a\u2028b", "a\u2029b", "a\u009bb", "a\u202eb", "a\ufeffb", "a\xffb"} {
		if got, want := errdef.Field(s), errdef.Quote(s); got != want {
			t.Errorf("Field(%q) = %q, want %q", s, got, want)
		}
	}
	for _, s := range []string{"example.com/demo", "1.0.0+build", "café", "a b"} {
		if got := errdef.Field(s); got != s {
			t.Errorf("Field(%q) = %q", s, got)
		}
	}
}
