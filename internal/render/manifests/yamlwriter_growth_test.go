package manifests

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	yamlv2 "go.yaml.in/yaml/v2"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

// writeYAML's memory grows as yaml.v2's Marshal's does, or linearly with
// its output, for objects at n and 16n of shapes an Application's values
// can give a chart's output: wide mappings (keys sorted), long sequences,
// long strings of each style (folded plain and quoted at the line width,
// literal), many multi-byte characters, deep nesting (whose text grows with
// the square of the depth for both, up to MaxEncodeDepth). The text is yaml.v2's.
func TestWriteYAMLGrowsLikeYAMLv2(t *testing.T) {
	deep := func(n int, wrap func(any) any) Object {
		var v any = "leaf"
		for range n {
			v = wrap(v)
		}
		return Object{"v": v}
	}
	shapes := map[string]func(n int) Object{
		"wide mapping": func(n int) Object {
			m := map[string]any{}
			for i := range n {
				m[fmt.Sprintf("key%d", i*7919%n)] = i
			}
			return Object{"m": m}
		},
		"wide unicode keys": func(n int) Object {
			m := map[string]any{}
			for i := range n {
				m[fmt.Sprintf("ключé%d", i)] = "v" // digits last: a total order (see mappingKeys)
			}
			return Object{"m": m}
		},
		"long sequence": func(n int) Object {
			l := make([]any, n)
			for i := range l {
				l[i] = fmt.Sprintf("item %d", i)
			}
			return Object{"l": l}
		},
		"folded plain":  func(n int) Object { return Object{"s": strings.Repeat("word ", 20*n) + "end"} },
		"double quoted": func(n int) Object { return Object{"s": strings.Repeat("a\tb ", 20*n)} },
		"single quoted": func(n int) Object { return Object{"s": "'" + strings.Repeat("it's ", 20*n)} },
		"literal":       func(n int) Object { return Object{"s": strings.Repeat("line\n", 20*n)} },
		"unicode":       func(n int) Object { return Object{"s": strings.Repeat("日本語 ", 20*n)} },
		"one long word": func(n int) Object { return Object{"s": strings.Repeat("x", 100*n)} },
		"deep mappings": func(n int) Object { return deep(n/32, func(v any) any { return map[string]any{"a": v} }) },
		"deep sequences": func(n int) Object {
			return deep(n/32, func(v any) any { return []any{v} })
		},
	}
	for name, shape := range shapes {
		t.Run(name, func(t *testing.T) {
			const n = 200
			cost := func(o Object) (w, wa, r, ra uint64, size int) {
				var out []byte
				var ok bool
				w, wa = heapCost(func() { out, ok = writeYAML(o) })
				if !ok {
					t.Fatalf("writeYAML declined %s", name)
				}
				r, ra = heapCost(func() { _, _ = yamlv2.Marshal(o) })
				checkWriteYAML(t, o)
				return w, wa, r, ra, len(out)
			}
			ws, wsa, rs, rsa, small := cost(shape(n))
			wl, wla, rl, rla, large := cost(shape(16 * n))
			output := float64(large) / float64(small)
			growth := func(a, b uint64) float64 { return float64(b+1) / float64(a+1) }
			t.Logf("output x%.1f (%d bytes): writeYAML bytes x%.1f allocs x%.1f; yaml.v2 bytes x%.1f allocs x%.1f; writeYAML/yaml.v2 bytes %.2f",
				output, large, growth(ws, wl), growth(wsa, wla), growth(rs, rl), growth(rsa, rla), float64(wl)/float64(rl+1))
			if g := growth(ws, wl); g > 2.5*output && g > 2.5*growth(rs, rl) {
				t.Errorf("writeYAML's bytes grow x%.1f for output x%.1f (yaml.v2's x%.1f)", g, output, growth(rs, rl))
			}
			if g := growth(wsa, wla); g > 2.5*output && g > 2.5*growth(rsa, rla) {
				t.Errorf("writeYAML's allocations grow x%.1f for output x%.1f (yaml.v2's x%.1f)", g, output, growth(rsa, rla))
			}
		})
	}
}

// Encode writes objects nested MaxEncodeDepth levels deep as yaml.v2 does
// and refuses deeper ones (whose YAML grows with the square of the depth:
// 81 MB for a 54 KB object 9 000 levels deep), writing nothing, whether
// writeYAML or yaml.v2 would write them (a long key leaves an object to
// yaml.v2); EncodeJSON refuses them alike (one nesting bound for both
// outputs), and writes the ones at the bound.
func TestEncodeDepthBound(t *testing.T) {
	nested := func(depth int, leaf any) Object {
		// The object's own values are at depth 1.
		v := leaf
		for range depth - 1 {
			v = map[string]any{"a": v}
		}
		return Object{"apiVersion": "v1", "kind": "ConfigMap", "d": v}
	}
	longKey := map[string]any{strings.Repeat("k", 200): "v"} // writeYAML leaves it to yaml.v2
	for _, leaf := range []any{"x", longKey} {
		ok := nested(MaxEncodeDepth, leaf)
		if leaf, isMap := leaf.(map[string]any); isMap {
			ok = nested(MaxEncodeDepth-1, leaf)
		}
		var buf bytes.Buffer
		if err := EncodeJSON(&buf, []Object{ok}); err != nil {
			t.Fatalf("EncodeJSON of an object %d levels deep: %v", MaxEncodeDepth, err)
		}
		buf.Reset()
		if err := Encode(&buf, []Object{ok}); err != nil {
			t.Fatalf("an object %d levels deep: %v", MaxEncodeDepth, err)
		}
		if want, err := yamlv2.Marshal(ok); err != nil || !bytes.Equal(buf.Bytes(), append([]byte("---\n"), want...)) {
			t.Fatalf("an object %d levels deep is not yaml.v2's text (%v)", MaxEncodeDepth, err)
		}
		for _, depth := range []int{MaxEncodeDepth + 1, 9000} {
			deep := nested(depth, leaf)
			buf.Reset()
			err := Encode(&buf, []Object{{"apiVersion": "v1", "kind": "ConfigMap"}, deep})
			if !errors.Is(err, errdef.ErrLimitExceeded) || !errors.Is(err, errdef.ErrInvalidInput) || buf.Len() != 0 {
				t.Fatalf("an object %d levels deep: Encode = %v, %d bytes written", depth, err, buf.Len())
			}
			if !strings.HasPrefix(err.Error(), "encoding object 1 (/ConfigMap//): nested more than 128 levels deep") {
				t.Fatalf("error: %v", err)
			}
			buf.Reset()
			if err := EncodeJSON(&buf, []Object{deep}); !errors.Is(err, errdef.ErrLimitExceeded) || buf.Len() != 0 ||
				!strings.Contains(err.Error(), "nested more than 128 levels deep") {
				t.Fatalf("EncodeJSON of an object %d levels deep: %v, %d bytes written", depth, err, buf.Len())
			}
		}
	}
}

// Decode refuses a document nested past the nesting bound, block-style
// (which fastDecode reads) or flow-style (yaml.v2), and reads one at it:
// what it returns, Encode and EncodeJSON write.
func TestDecodeDepthBound(t *testing.T) {
	block := func(levels int) string {
		// The object is the first level; each "a:" below it one more.
		var b strings.Builder
		b.WriteString("apiVersion: v1\nkind: ConfigMap\n")
		for i := range levels - 1 {
			b.WriteString(strings.Repeat("  ", i) + "a:\n")
		}
		b.WriteString(strings.Repeat("  ", levels-1) + "b: x\n")
		return b.String()
	}
	flow := func(levels int) string {
		return "apiVersion: v1\nkind: ConfigMap\nd: " + strings.Repeat("[", levels-1) + strings.Repeat("]", levels-1) + "\n"
	}
	for name, doc := range map[string]func(int) string{"block": block, "flow": flow} {
		objs, err := Decode("at.yaml", []byte(doc(MaxEncodeDepth)))
		if err != nil || len(objs) != 1 {
			t.Fatalf("%s: a document %d levels deep: %v", name, MaxEncodeDepth, err)
		}
		var buf bytes.Buffer
		if err := Encode(&buf, objs); err != nil {
			t.Fatalf("%s: Encode of what Decode read: %v", name, err)
		}
		if err := EncodeJSON(&buf, objs); err != nil {
			t.Fatalf("%s: EncodeJSON of what Decode read: %v", name, err)
		}
		for _, levels := range []int{MaxEncodeDepth + 1, 2000} {
			_, err := Decode("deep.yaml", []byte(doc(levels)))
			if !errors.Is(err, errdef.ErrLimitExceeded) || !errors.Is(err, errdef.ErrInvalidInput) ||
				!strings.Contains(err.Error(), "deep.yaml: document 1") || !strings.Contains(err.Error(), "nested more than 128 levels deep") {
				t.Errorf("%s: a document %d levels deep: %v", name, levels, err)
			}
		}
	}
}
