// Package fieldpath parses and applies the value paths used by deployment
// definitions, OCM image mappings and ocm-controller ConfigData rules:
//
//	image.repository
//	spec.template.spec.containers[0].image
//	metadata.annotations["prometheus.io/scrape"]
//	spec.template.spec.containers[0].env[-]     (append, when setting)
//
// Keys are separated by dots; a key that contains a dot, a bracket or a quote
// is written in brackets with double or single quotes. [n] indexes a list,
// [-] appends to it.
package fieldpath

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

// MaxLength bounds a path's text; paths are written by people.
const MaxLength = 1024

// Elem is one step of a path: a map key, a list index, or an append.
type Elem struct {
	Key    string
	Index  int
	IsList bool // Index (or Append) applies
	Append bool // [-]
}

// Path is a parsed field path.
type Path []Elem

// Parse parses a path.
func Parse(s string) (Path, error) {
	if s == "" {
		return nil, fmt.Errorf("empty field path")
	}
	if len(s) > MaxLength {
		return nil, fmt.Errorf("field path is %d characters, more than %d", len(s), MaxLength)
	}
	var p Path
	i := 0
	expectKey := true
	for i < len(s) {
		switch c := s[i]; {
		case c == '[':
			e, next, err := parseBracket(s, i)
			if err != nil {
				return nil, err
			}
			p = append(p, e)
			i = next
			expectKey = false
		case c == '.':
			if expectKey {
				return nil, fmt.Errorf("field path %s: empty key at offset %d", errdef.Quote(s), i)
			}
			i++
			expectKey = true
			if i == len(s) {
				return nil, fmt.Errorf("field path %s ends with a dot", errdef.Quote(s))
			}
		default:
			if !expectKey {
				return nil, fmt.Errorf("field path %s: want . or [ at offset %d", errdef.Quote(s), i)
			}
			j := i
			for j < len(s) && s[j] != '.' && s[j] != '[' {
				if s[j] == ']' || s[j] == '"' || s[j] == '\'' {
					return nil, fmt.Errorf("field path %s: unexpected %s at offset %d (quote keys like [\"a.b\"])", errdef.Quote(s), errdef.Quote(string(s[j])), j)
				}
				j++
			}
			p = append(p, Elem{Key: s[i:j]})
			i = j
			expectKey = false
		}
	}
	if expectKey {
		return nil, fmt.Errorf("field path %s ends with a dot", errdef.Quote(s))
	}
	for k, e := range p {
		if e.Append && k != len(p)-1 {
			return nil, fmt.Errorf("field path %s: [-] (append) must be the last element", errdef.Quote(s))
		}
	}
	return p, nil
}

// parseBracket parses the [..] element of s at offset i: a quoted key, a
// list index or - (append); next is the offset after it.
func parseBracket(s string, i int) (e Elem, next int, err error) {
	j := strings.IndexByte(s[i:], ']')
	if j < 0 {
		return Elem{}, 0, fmt.Errorf("field path %s: unclosed [ at offset %d", errdef.Quote(s), i)
	}
	inner := s[i+1 : i+j]
	if len(inner) >= 2 && (inner[0] == '"' || inner[0] == '\'') {
		q := inner[0]
		// The key may contain ']' inside its quotes: find the closing quote.
		end := strings.IndexByte(s[i+2:], q)
		if end < 0 {
			return Elem{}, 0, fmt.Errorf("field path %s: unclosed quote at offset %d", errdef.Quote(s), i+1)
		}
		key := s[i+2 : i+2+end]
		k := i + 2 + end + 1
		if k >= len(s) || s[k] != ']' {
			return Elem{}, 0, fmt.Errorf("field path %s: want ] after the quoted key at offset %d", errdef.Quote(s), k)
		}
		return Elem{Key: key}, k + 1, nil
	}
	if inner == "-" {
		return Elem{IsList: true, Append: true}, i + j + 1, nil
	}
	n, err := strconv.Atoi(inner)
	if err != nil || n < 0 {
		return Elem{}, 0, fmt.Errorf("field path %s: [%s] is not a list index (a number, or - to append) nor a quoted key", errdef.Quote(s), inner)
	}
	return Elem{IsList: true, Index: n}, i + j + 1, nil
}

// MustParse parses a path known to be valid.
func MustParse(s string) Path {
	p, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return p
}

// Key returns a path of plain map keys.
func Key(keys ...string) Path {
	p := make(Path, len(keys))
	for i, k := range keys {
		p[i] = Elem{Key: k}
	}
	return p
}

// Child returns p extended by a key (a copy; p is not modified).
func (p Path) Child(key string) Path {
	out := make(Path, len(p), len(p)+1)
	copy(out, p)
	return append(out, Elem{Key: key})
}

// Index returns p extended by a list index (a copy).
func (p Path) Index(i int) Path {
	out := make(Path, len(p), len(p)+1)
	copy(out, p)
	return append(out, Elem{IsList: true, Index: i})
}

// String formats the path so that Parse reads it back.
func (p Path) String() string {
	var b strings.Builder
	for i, e := range p {
		switch {
		case e.Append:
			b.WriteString("[-]")
		case e.IsList:
			b.WriteString("[" + strconv.Itoa(e.Index) + "]")
		case plainKey(e.Key):
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(e.Key)
		default:
			b.WriteString("[" + strconv.Quote(e.Key) + "]")
		}
	}
	return b.String()
}

// AppendKey is the text of a path (as String spells it) extended by a key:
// String of p.Child(key) from p.String(), without building either path.
func AppendKey(p, key string) string {
	switch {
	case !plainKey(key):
		return p + "[" + strconv.Quote(key) + "]"
	case p == "":
		return key
	}
	return p + "." + key
}

func plainKey(k string) bool {
	return k != "" && !strings.ContainsAny(k, ".[]\"'")
}

// HasPrefix reports whether q starts with p.
func (p Path) HasPrefix(q Path) bool {
	if len(q) > len(p) {
		return false
	}
	for i := range q {
		if p[i] != q[i] {
			return false
		}
	}
	return true
}

// Get returns the value at p in root.
func Get(root any, p Path) (any, bool) {
	cur := root
	for _, e := range p {
		switch {
		case e.Append:
			return nil, false
		case e.IsList:
			l, ok := cur.([]any)
			if !ok || e.Index >= len(l) {
				return nil, false
			}
			cur = l[e.Index]
		default:
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			v, ok := m[e.Key]
			if !ok {
				return nil, false
			}
			cur = v
		}
	}
	return cur, true
}

// Set stores v at p in root, creating missing maps on the way. A list index
// must exist; [-] appends. It fails, naming the path, when an intermediate
// value has the wrong kind.
func Set(root map[string]any, p Path, v any) error {
	if len(p) == 0 {
		return fmt.Errorf("empty field path")
	}
	if p[0].IsList {
		return fmt.Errorf("field path %s: the root is a map, not a list", p)
	}
	_, err := set(root, p, 0, v)
	return err
}

// set stores v below cur (the value at p[:i]) and returns the possibly new
// container (lists grow by append).
func set(cur any, p Path, i int, v any) (any, error) {
	e := p[i]
	last := i == len(p)-1
	if e.IsList {
		l, ok := cur.([]any)
		if !ok {
			return nil, fmt.Errorf("field path %s: %s is %s, not a list", p, p[:i], kind(cur))
		}
		if e.Append {
			return append(l, v), nil
		}
		if e.Index >= len(l) {
			return nil, fmt.Errorf("field path %s: index %d is out of range (the list at %s has %d items)", p, e.Index, p[:i], len(l))
		}
		if last {
			l[e.Index] = v
			return l, nil
		}
		child, err := set(ensure(l[e.Index], p[i+1]), p, i+1, v)
		if err != nil {
			return nil, err
		}
		l[e.Index] = child
		return l, nil
	}
	m, ok := cur.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("field path %s: %s is %s, not a map", p, p[:i], kind(cur))
	}
	if last {
		m[e.Key] = v
		return m, nil
	}
	child, err := set(ensure(m[e.Key], p[i+1]), p, i+1, v)
	if err != nil {
		return nil, err
	}
	m[e.Key] = child
	return m, nil
}

// ensure creates a missing container for the next element.
func ensure(v any, next Elem) any {
	if v != nil {
		return v
	}
	if next.IsList {
		return []any{}
	}
	return map[string]any{}
}

func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "a map"
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	default:
		return "a number"
	}
}
