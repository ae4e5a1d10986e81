package manifests

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	yamlv2 "go.yaml.in/yaml/v2"
)

// Hostile documents: fastDecode agrees with yaml.v2 (through jsonValue)
// or declines, alone and nested in a mapping and a sequence; in particular
// it never takes what yaml.v2 refuses.
func TestFastDecodeHostileSameAsYAMLv2(t *testing.T) {
	scalars := []string{
		"0x1F", "-0x1F", "0X1F", "0xG", "0b101", "-0b101", "0o17", "012", "-012", "08", "0", "-0", "+0", "00",
		"1_000", "1__0", "_1", "1_", "1e3", "1E3", "1e+3", "1e-3", "1e", "1.", ".5", "-.5", "+.5", "1.5e3", "6.8523015e+5",
		".inf", ".Inf", ".INF", "-.inf", "+.inf", ".nan", ".NaN", ".NAN", "inf", "nan",
		"~", "null", "Null", "NULL", "nULL", "", "y", "Y", "n", "N", "yes", "Yes", "YES", "yEs", "no", "on", "On", "ON", "off", "Off", "true", "True", "TRUE", "tRUE", "false",
		"2001-12-14", "2001-12-14t21:59:43.10-05:00", "2001-12-14 21:59:43.10 -5", "2001-12-15T02:59:43.1Z", "2002-1-1", "1:20", "190:20:30.15", "-1:30", "1:60",
		"=", "<<", "-", "--", "---", "...", "a...", "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
		"18446744073709551615", "18446744073709551616", "1e309", "-1e309", "4.9e-324", "1e-400", "0.1", "+12", "+-1", "0x_1F", "0b_1",
	}
	var docs []string
	for _, s := range scalars {
		docs = append(docs, "v: "+s+"\n", s+": v\n", "- "+s+"\n", "a: ["+s+"]\n", "a: {k: "+s+"}\n", "a: {"+s+": v}\n")
	}
	docs = append(docs,
		// Keys whose text is longer than yaml.v2 takes (1024 characters
		// up to the ':'), though their values are short.
		"\""+strings.Repeat(`\x41`, 300)+"\": 1\n", "'"+strings.Repeat(`''`, 600)+"': 1\n",
		"a: {\""+strings.Repeat("R", 1100)+"\": c}\n", "a: {"+strings.Repeat("R", 1100)+": c}\n", "\"k\""+strings.Repeat(" ", 1100)+": 1\n",
		"a: {\""+strings.Repeat("R", 1020)+"\": c}\n", strings.Repeat("k", 1023)+": 1\n", strings.Repeat("k", 1024)+": 1\n",
		// Duplicates, merge keys, complex keys, keys equal as strings.
		"a: 1\na: 2\n", "a: 1\n'a': 2\n", "a: 1\n\"a\": 2\n", "a: {b: 1, 'b': 2}\n", "1: a\n'1': b\n", "true: a\ny: b\n",
		"<<: {a: 1}\n", "'<<': 1\n", "\"<<\": 1\n", "a: {<<: {}}\n", "a: {'<<': 1}\n", "? a\n: b\n", "? a\n", "?a: 1\n", "a?: 1\n",
		// Byte order marks, NUL and other controls, invalid UTF-8, CRLF and other breaks.
		"\ufeffa: 1\n", "a: \ufeff\n", "a: x\ufeff\n", "a: 1\x00\n", "a: \"\x00\"\n", "a: \"\\0\"\n", "a: \xff\n", "a: \"\xc3\x28\"\n",
		"a: \xed\xa0\x80\n", "a: 1\r\nb: 2\r\n", "a: |\r\n  x\r\n", "a: 1\rb: 2\n", "a: x\u2028y\n", "a: x\u2029y\n", "a: x\u0085y\n",
		"a: \"\\ud800\"\n", "a: \"\\U00110000\"\n", "a: \"\\uFFFE\"\n", "a: \"\\x80\"\n", "a: \x7f\n", "a: \"\x7f\"\n", "a: \x1b\n", "a:\t1\n", "\ta: 1\n",
		// Document markers and directives inside a document.
		"a: 1\n---\nb: 2\n", "a: 1\n...\n", "%YAML 1.1\na: 1\n", "a: |\n  ---\n", "a: x\n  ---\n", "a:\n  - ---\n",
	)
	for _, doc := range docs {
		checkFastDecode(t, []byte(doc))
		indented := "  " + strings.ReplaceAll(strings.TrimSuffix(doc, "\n"), "\n", "\n  ") + "\n"
		checkFastDecode(t, []byte("root:\n"+indented))
		checkFastDecode(t, []byte("- k: v\n"+indented))
	}
}

// heapCost is the bytes and allocations f allocates. Two collections
// first empty every sync.Pool (its victim cache survives one), so f starts
// from the same state whatever ran before it: a scratch buffer left by an
// earlier, larger call would make f look cheaper than it is.
func heapCost(f func()) (bytes, allocs uint64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, after.Mallocs - before.Mallocs
}

// fastDecode's memory grows linearly with its input, as yaml.v2's does,
// for inputs built to make a line-based reader rescan or copy: at n and 8n
// 16n of each shape, the bytes and allocations of fastDecode (whether it
// takes the document or declines it) grow at most 2.5 times as much as
// the input's size (slices grow by doubling; small integers are not
// boxed) or no more than yaml.v2's do (with that margin); where it
// takes the document, yaml.v2 must read it to the same values. (Time is
// measured by BenchmarkFastDecodeShapes; what allocates nothing per line
// is read once per line, see fastDecode.)
func TestFastDecodeGrowsLinearly(t *testing.T) {
	for name, doc := range fastDecodeShapes() {
		t.Run(name, func(t *testing.T) {
			n := shapeSize(name)
			cost := func(data []byte) (fast, fastAllocs, ref, refAllocs uint64, took bool) {
				fast, fastAllocs = heapCost(func() { _, took = fastDecode(data) })
				ref, refAllocs = heapCost(func() {
					var v any
					_ = yamlv2.Unmarshal(data, &v)
				})
				return
			}
			small, large := []byte(doc(n)), []byte(doc(16*n))
			fs, fsa, rs, rsa, _ := cost(small)
			fl, fla, rl, rla, took := cost(large)
			if took {
				checkFastDecode(t, large)
			}
			input := float64(len(large)) / float64(len(small))
			growth := func(a, b uint64) float64 { return float64(b+1) / float64(a+1) }
			t.Logf("input x%.1f (%d bytes, taken %v): fastDecode bytes x%.1f allocs x%.1f; yaml.v2 bytes x%.1f allocs x%.1f; fastDecode/yaml.v2 bytes %.2f",
				input, len(large), took, growth(fs, fl), growth(fsa, fla), growth(rs, rl), growth(rsa, rla), float64(fl)/float64(rl+1))
			if g := growth(fs, fl); g > 2.5*input && g > 2.5*growth(rs, rl) {
				t.Errorf("fastDecode's bytes grow x%.1f for input x%.1f (yaml.v2's x%.1f)", g, input, growth(rs, rl))
			}
			if g := growth(fsa, fla); g > 2.5*input && g > 2.5*growth(rsa, rla) {
				t.Errorf("fastDecode's allocations grow x%.1f for input x%.1f (yaml.v2's x%.1f)", g, input, growth(rsa, rla))
			}
		})
	}
}

func keysDoc(n int, format string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, format, i)
	}
	return b.String()
}

// fastDecodeShapes are documents of n lines or items (see
// TestFastDecodeGrowsLinearly).
func fastDecodeShapes() map[string]func(n int) string {
	return map[string]func(n int) string{
		"deep mappings": func(n int) string {
			var b strings.Builder
			for i := range n {
				fmt.Fprintf(&b, "%sa:\n", strings.Repeat(" ", i))
			}
			return b.String()
		},
		"deep sequences": func(n int) string {
			var b strings.Builder
			for i := range n {
				fmt.Fprintf(&b, "%s-\n", strings.Repeat(" ", 2*i))
			}
			return b.String()
		},
		"deep compact sequences": func(n int) string {
			var b strings.Builder
			for i := range n {
				fmt.Fprintf(&b, "%s- a:\n", strings.Repeat(" ", 2*i))
			}
			return b.String()
		},
		"wide mapping":     func(n int) string { return keysDoc(n, "k%d: v\n") },
		"wide sequence":    func(n int) string { return keysDoc(n, "- x%d\n") },
		"wide numbers":     func(n int) string { return keysDoc(n, "- 1%06d\n") },
		"wide flow":        func(n int) string { return "a: [" + strings.TrimSuffix(keysDoc(n, "x%d, "), ", ") + "]\n" },
		"long plain line":  func(n int) string { return "a: " + strings.Repeat("x", 100*n) + "\n" },
		"long quoted line": func(n int) string { return "a: \"" + strings.Repeat(`x\t`, 50*n) + "\"\n" },
		"long words":       func(n int) string { return "a: " + strings.Repeat("x ", 50*n) + "y\n" },
		"long key":         func(n int) string { return strings.Repeat("k", 100*n) + ": 1\n" },
		"plain lines":      func(n int) string { return "a: x\n" + strings.Repeat("  y\n", n) },
		"plain gaps":       func(n int) string { return "a: x\n" + strings.Repeat("  y\n\n\n", n) },
		"quoted lines":     func(n int) string { return "a: \"x\n" + strings.Repeat("  y \\\n  z\n", n) + "  \"\n" },
		"single lines":     func(n int) string { return "a: 'x\n" + strings.Repeat("  y ''\n\n", n) + "  '\n" },
		"literal lines":    func(n int) string { return "a: |\n" + strings.Repeat("  line\n\n", n) },
		"blank lines":      func(n int) string { return "a: x\n" + strings.Repeat("\n", n) + "b: y\n" },
		"blank after keys": func(n int) string { return keysDoc(n, "k%d: v\n\n\n\n") },
		"comment lines":    func(n int) string { return "a: 1\n" + strings.Repeat("# c\n", n) },
		"huge indentation": func(n int) string { return "a:\n" + strings.Repeat(" ", 100*n) + "b: 1\n" },
		"indented literal": func(n int) string { return "a: |\n" + strings.Repeat(" ", 100*n) + "x\n" },
		"declined at end":  func(n int) string { return keysDoc(n, "k%d: v\n") + "z: &a 1\n" },
	}
}

// shapeSize is the smaller n of a shape in TestFastDecodeGrowsLinearly.
func shapeSize(name string) int {
	if strings.HasPrefix(name, "deep") {
		return 60 // 960 levels at 16n, within fastMaxDepth
	}
	return 250
}

// BenchmarkFastDecodeShapes: fastDecode and yaml.v2 on each shape at n and
// 16n; compare the time per op of the two sizes (it should grow about 16
// times for the shapes of n lines, as yaml.v2's does).
func BenchmarkFastDecodeShapes(b *testing.B) {
	for name, doc := range fastDecodeShapes() {
		for _, n := range []int{shapeSize(name), 16 * shapeSize(name)} {
			data := []byte(doc(n))
			b.Run(fmt.Sprintf("%s/n=%d/fast", strings.ReplaceAll(name, " ", "_"), n), func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					fastDecode(data)
				}
			})
			b.Run(fmt.Sprintf("%s/n=%d/yaml.v2", strings.ReplaceAll(name, " ", "_"), n), func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					var v any
					_ = yamlv2.Unmarshal(data, &v)
				}
			})
		}
	}
}
