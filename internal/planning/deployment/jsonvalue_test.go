package deployment

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

// jsonValue's shortcut gives what the round trip through JSON and the YAML
// parser gives; values it does not take go through the round trip.
func TestJSONValueShortcut(t *testing.T) {
	long := strings.Repeat("<&>", maxShortcutString/3)
	for _, v := range []any{
		nil, true, false, "", "localBlob", "sha256:0123abcd", "application/vnd.oci.image.manifest.v1+json",
		"ghcr.io/org/app:1.0.0@sha256:00", "yes", "no", "null", "~", "1", "0x10", "1e3", "-0", "true",
		"a: b", "- a", "[a]", "{a: b}", "#c", "&a", "*a", "!t", "%YAML", "@x", "`x`", "'q'", `"q"`, `back\slash`,
		"<script>&amp;</script>", " lead", "trail ", "a  b", "---", "...", "? x", "| x", "> x",
		long, long + "<",
		// Not taken: the round trip decides.
		"tab\there", "line\nbreak", "caf\u00e9", "\u2028", "\x7f", "\xff", "\ufeffbom",
		1.0, 2.5, math.Copysign(0, -1), 1e21, map[string]any{"a": 1.0, "<<": map[string]any{"b": "c"}}, []any{"a", 1.0},
	} {
		if got, want := jsonValue(v), jsonValueRoundTrip(v); !reflect.DeepEqual(got, want) {
			t.Errorf("jsonValue(%.60q) = %#.60v, the round trip gives %#.60v", v, got, want)
		}
	}
	if jsonValue(long) != long {
		t.Error("a string of the longest length taken went through the round trip")
	}
}
