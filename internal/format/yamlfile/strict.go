package yamlfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/fieldpath"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/nesting"
)

// MaxDocumentSize bounds a document DecodeStrict and ParseStrict read (a
// deployment definition, a config resource, a parameter value).
const MaxDocumentSize = 1 << 20

// maxNodes bounds the nodes visited when converting YAML (aliases included),
// against alias bombs.
const maxNodes = 1 << 20

// maxAliasNodes bounds the nodes that aliases add: a definition reuses a
// block here and there, it does not multiply itself (yaml.v3's own decoder
// refuses such ratios too, but the Node API it leaves to us).
const maxAliasNodes = 1 << 16

// DecodeStrict decodes one YAML or JSON document into out, in the dialect of
// package yamlfile (the one Kubernetes tools read: yes, on, y are booleans,
// 0777 is octal), a pointer to a struct, refusing unknown fields,
// duplicate keys, several documents and values of the wrong kind, with the
// field path and line of the offence.
//
// Its work and memory are linear in the document: a document nested
// deeper than nesting.MaxDepth is refused before it is converted, and no
// field path is kept per node (a path is spelled out for a message only).
func DecodeStrict(name string, data []byte, out any) error {
	_, err := decodeStrictDoc(name, data, out)
	return err
}

func decodeStrictDoc(name string, data []byte, out any) (*yaml.Node, error) {
	generic, doc, err := parseStrict(name, data)
	if err != nil {
		return nil, err
	}
	return doc, decodeStrict(name, generic, doc, out)
}

// Position is where a field path is written in a document: the line and
// column (1-based) of its key, of the item's first character in a list.
type Position struct {
	Line, Column int
}

// String is "line L, column C".
func (p Position) String() string {
	return fmt.Sprintf("line %d, column %d", p.Line, p.Column)
}

// Positions says where the field paths of a document are written
// (DecodeStrictPositions). It keeps the document's nodes, not a position
// per path: a path is looked up when asked for. The zero value (and nil)
// knows no position.
type Positions struct {
	doc *yaml.Node
}

// At is where p is written: the position of its key, or of the item's
// first character in a list; an explicit key before the one << merges
// under it; a value an alias repeats is where its anchor writes it.
func (ps *Positions) At(p fieldpath.Path) (Position, bool) {
	if ps == nil || ps.doc == nil || len(p) == 0 {
		return Position{}, false
	}
	key, _ := locate(ps.doc, p)
	if key == nil {
		return Position{}, false
	}
	return Position{Line: key.Line, Column: key.Column}, true
}

// Of is At of the path p spells (fieldpath.Path.String()).
func (ps *Positions) Of(p string) (Position, bool) {
	path, err := fieldpath.Parse(p)
	if err != nil {
		return Position{}, false
	}
	return ps.At(path)
}

// DecodeStrictPositions is DecodeStrict that also returns where each field
// path (fieldpath.Path.String(), e.g. "spec.renders[0].kustomize") is
// written, for messages and reports that point into the document.
func DecodeStrictPositions(name string, data []byte, out any) (*Positions, error) {
	doc, err := decodeStrictDoc(name, data, out)
	if err != nil {
		return nil, err
	}
	return &Positions{doc: doc}, nil
}

func decodeStrict(name string, generic any, doc *yaml.Node, out any) error {
	if _, ok := generic.(map[string]any); !ok {
		return fmt.Errorf("%w: %s is not a YAML map", errdef.ErrInvalidInput, name)
	}
	if fe := checkFields(generic, reflect.TypeOf(out).Elem(), nil); fe != nil {
		at := ""
		if _, v := locate(doc, fe.path); v != nil {
			at = fmt.Sprintf(" (line %d)", v.Line)
		}
		where := errdef.Field(fe.path.String())
		if where == "" {
			where = "the document"
		}
		return fmt.Errorf("%w: %s: %s%s: %s", errdef.ErrInvalidInput, name, where, at, fe.msg)
	}
	js, err := json.Marshal(generic)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", errdef.ErrInvalidInput, name, err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("%w: %s: %v", errdef.ErrInvalidInput, name, err)
	}
	return nil
}

// locate finds the node of p in doc as the converter reads it: for a key,
// the key node and its value node as written (an alias, not what it
// names); for a list item, the item node twice. nil when p is not there.
func locate(doc *yaml.Node, p fieldpath.Path) (key, value *yaml.Node) {
	n := doc
	for _, e := range p {
		n = resolved(n)
		if n == nil {
			return nil, nil
		}
		if e.IsList {
			if n.Kind != yaml.SequenceNode || e.Append || e.Index >= len(n.Content) {
				return nil, nil
			}
			key, value = n.Content[e.Index], n.Content[e.Index]
		} else {
			if n.Kind != yaml.MappingNode {
				return nil, nil
			}
			key, value = mappingEntry(n, e.Key, 0)
			if key == nil {
				return nil, nil
			}
		}
		n = value
	}
	return key, value
}

// resolved is n past its document node and aliases.
func resolved(n *yaml.Node) *yaml.Node {
	for hops := 0; n != nil && hops <= maxAliasHops; hops++ {
		switch n.Kind {
		case yaml.DocumentNode:
			if len(n.Content) == 0 {
				return nil
			}
			n = n.Content[0]
		case yaml.AliasNode:
			n = n.Alias
		default:
			return n
		}
	}
	return nil
}

// maxAliasHops bounds following aliases of aliases (a document the
// converter accepted has none deeper than its nesting).
const maxAliasHops = 1 << 10

// mappingEntry finds key in the mapping n: written there, else in what <<
// merges, in order (as mapping converts them).
func mappingEntry(n *yaml.Node, key string, depth int) (k, v *yaml.Node) {
	if depth > nesting.MaxDepth {
		return nil, nil
	}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn := n.Content[i]
		if kn.Kind == yaml.ScalarNode && kn.Tag == "!!merge" {
			merges = append(merges, n.Content[i+1])
			continue
		}
		if kn.Kind == yaml.ScalarNode && kn.Value == key {
			return kn, n.Content[i+1]
		}
	}
	for _, m := range merges {
		srcs := []*yaml.Node{m}
		if r := resolved(m); r != nil && r.Kind == yaml.SequenceNode {
			srcs = r.Content
		}
		for _, s := range srcs {
			if r := resolved(s); r != nil && r.Kind == yaml.MappingNode {
				if k, v := mappingEntry(r, key, depth+1); k != nil {
					return k, v
				}
			}
		}
	}
	return nil, nil
}

// ParseStrict reads exactly one YAML document into JSON-compatible values
// (numbers as json.Number), with the limits of DecodeStrict.
func ParseStrict(name string, data []byte) (any, error) {
	v, _, err := parseStrict(name, data)
	return v, err
}

// parseStrict is ParseStrict; it also returns the document's nodes.
func parseStrict(name string, data []byte) (any, *yaml.Node, error) {
	if len(data) > MaxDocumentSize {
		return nil, nil, fmt.Errorf("%w: %s is %d bytes, more than the limit of %d: %w", errdef.ErrInvalidInput, name, len(data), MaxDocumentSize, errdef.ErrLimitExceeded)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil, fmt.Errorf("%w: %s is empty", errdef.ErrInvalidInput, name)
		}
		return nil, nil, fmt.Errorf("%w: %s: %v", errdef.ErrInvalidInput, name, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, nil, fmt.Errorf("%w: %s holds several YAML documents (another starts at line %d), want one", errdef.ErrInvalidInput, name, extra.Line)
	} else if !errors.Is(err, io.EOF) {
		return nil, nil, fmt.Errorf("%w: %s: %v", errdef.ErrInvalidInput, name, err)
	}
	// Count what the aliases expand to before expanding anything: an alias
	// bomb is refused in microseconds, not after building its gigabytes.
	if err := checkExpansion(&doc); err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %v: %w", errdef.ErrInvalidInput, name, err, errdef.ErrLimitExceeded)
	}
	if err := nesting.CheckNode(&doc); err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %w", errdef.ErrInvalidInput, name, err)
	}
	c := &converter{}
	v, err := c.convert(&doc)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %v", errdef.ErrInvalidInput, name, err)
	}
	return v, &doc, nil
}

// checkExpansion counts the nodes doc expands to, each anchored node's
// expansion computed once, and refuses more than maxNodes in all or more
// than maxAliasNodes added by aliases.
func checkExpansion(doc *yaml.Node) error {
	sizes := map[*yaml.Node]int{}
	var aliased, plain int
	var size func(n *yaml.Node, depth int) int
	size = func(n *yaml.Node, depth int) int {
		if n == nil || depth > 10000 {
			return 1
		}
		if s, ok := sizes[n]; ok {
			return s
		}
		sizes[n] = 1 // a cycle counts once (the converter refuses it by count)
		total := 1
		if n.Kind == yaml.AliasNode {
			total += size(n.Alias, depth+1)
		} else {
			for _, c := range n.Content {
				total += size(c, depth+1)
				if total > maxNodes {
					break
				}
			}
		}
		total = min(total, maxNodes+1)
		sizes[n] = total
		return total
	}
	var walk func(n *yaml.Node, depth int)
	walk = func(n *yaml.Node, depth int) {
		if n == nil || depth > 10000 {
			return
		}
		plain++
		if n.Kind == yaml.AliasNode {
			aliased += size(n.Alias, depth+1)
			return
		}
		for _, c := range n.Content {
			walk(c, depth+1)
		}
	}
	walk(doc, 0)
	switch {
	case aliased > maxAliasNodes:
		return fmt.Errorf("its aliases expand to more than %d YAML nodes", maxAliasNodes)
	case plain+aliased > maxNodes:
		return fmt.Errorf("more than %d YAML nodes (aliases expand)", maxNodes)
	}
	return nil
}

// converter turns a document's nodes into JSON-compatible values. path is
// the field path being converted, one element per level, kept as a stack
// (appended and cut back, never copied): it is spelled out only in an
// error.
type converter struct {
	path  fieldpath.Path
	nodes int
}

func (c *converter) convert(n *yaml.Node) (any, error) {
	c.nodes++
	if c.nodes > maxNodes {
		return nil, fmt.Errorf("line %d: more than %d YAML nodes (aliases expand)", n.Line, maxNodes)
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return c.convert(n.Content[0])
	case yaml.AliasNode:
		return c.convert(n.Alias)
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for i, e := range n.Content {
			c.path = append(c.path, fieldpath.Elem{IsList: true, Index: i})
			v, err := c.convert(e)
			c.path = c.path[:len(c.path)-1]
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		return c.mapping(n)
	case yaml.ScalarNode:
		return scalar(n)
	}
	return nil, fmt.Errorf("line %d: unsupported YAML node", n.Line)
}

// mapping converts a map node; << merges maps under the keys given
// explicitly. A key given twice with the same value is read once, as
// Kubernetes tools read it (they keep the last; kro's own examples repeat
// keys so); with another value it is refused, not read as the last.
func (c *converter) mapping(n *yaml.Node) (any, error) {
	out := map[string]any{}
	explicit := map[string]int{} // the line of each key given explicitly
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
			merges = append(merges, v)
			continue
		}
		if k.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("line %d: map keys must be scalars", k.Line)
		}
		key := k.Value
		if isPlain(k) {
			// Kubernetes tools would rename this key (n: is "false",
			// 0x10: is "16"); refused rather than read differently.
			if jk, ok := Key(k.Value); !ok || jk != k.Value {
				return nil, fmt.Errorf("line %d: key %s is read by Kubernetes tools as %s: quote it (%s)", k.Line, errdef.Field(k.Value), keyAs(jk, ok), errdef.Quote(k.Value))
			}
		}
		first, twice := explicit[key]
		if !twice {
			explicit[key] = k.Line
		}
		c.path = append(c.path, fieldpath.Elem{Key: key})
		val, err := c.convert(v)
		c.path = c.path[:len(c.path)-1]
		if err != nil {
			return nil, err
		}
		if twice {
			if !reflect.DeepEqual(out[key], val) {
				return nil, fmt.Errorf("line %d: key %s is defined twice in %s, with another value than at line %d (Kubernetes tools would take the last): keep one",
					k.Line, errdef.Quote(key), errdef.Quote(orRoot(c.path)), first)
			}
			continue
		}
		out[key] = val
	}
	for _, m := range merges {
		srcs := []*yaml.Node{m}
		if m.Kind == yaml.SequenceNode {
			srcs = m.Content
		}
		for _, s := range srcs {
			mv, err := c.convert(s)
			if err != nil {
				return nil, err
			}
			mm, ok := mv.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("line %d: << merges maps only", s.Line)
			}
			for k, v := range mm {
				if _, ok := out[k]; !ok {
					out[k] = v
				}
			}
		}
	}
	return out, nil
}

// scalar converts a scalar by its tag: numbers as json.Number, finite only.
func scalar(n *yaml.Node) (any, error) {
	if isPlain(n) {
		return plainValue(n)
	}
	switch n.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, fmt.Errorf("line %d: %v", n.Line, err)
		}
		return b, nil
	case "!!int":
		var i int64
		if err := n.Decode(&i); err != nil {
			var f float64
			if err2 := n.Decode(&f); err2 != nil {
				return nil, fmt.Errorf("line %d: %v", n.Line, err)
			}
			return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
		}
		return json.Number(strconv.FormatInt(i, 10)), nil
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil {
			return nil, fmt.Errorf("line %d: %v", n.Line, err)
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, fmt.Errorf("line %d: %s is not a finite number", n.Line, n.Value)
		}
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
	default: // !!str, !!timestamp, !!binary and custom tags: the text
		return n.Value, nil
	}
}

func keyAs(jk string, ok bool) string {
	if !ok {
		return "null, which no JSON key can be"
	}
	return errdef.Quote(jk)
}

// isPlain reports whether a scalar is written without quotes, block style or
// tag: the scalars whose type the dialect decides (Plain).
func isPlain(n *yaml.Node) bool {
	return n.Style&(yaml.TaggedStyle|yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0
}

// plainValue is a plain scalar as Kubernetes tools read it, numbers as
// json.Number.
func plainValue(n *yaml.Node) (any, error) {
	switch v := Plain(n.Value).(type) {
	case int64:
		return json.Number(strconv.FormatInt(v, 10)), nil
	case uint64:
		return json.Number(strconv.FormatUint(v, 10)), nil
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return nil, fmt.Errorf("line %d: %s is not a finite number", n.Line, n.Value)
		}
		return json.Number(strconv.FormatFloat(v, 'g', -1, 64)), nil
	default:
		return v, nil
	}
}

func orRoot(p fieldpath.Path) string {
	if len(p) == 0 {
		return "the document"
	}
	return p.String()
}

var unmarshalerType = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()

type fieldError struct {
	path fieldpath.Path
	msg  string
}

// checkFields walks a decoded JSON value along a Go type. path is a stack
// shared down the walk (appended in place, not copied per node); an error
// keeps a copy.
func checkFields(v any, t reflect.Type, path fieldpath.Path) *fieldError {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if v == nil || t.Kind() == reflect.Interface || reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil
	}
	fail := func(format string, args ...any) *fieldError {
		return &fieldError{path: slices.Clone(path), msg: fmt.Sprintf(format, args...)}
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return fail("want a map, got %s", jsonKind(v))
		}
		fields := map[string]reflect.StructField{}
		var names []string
		structFields(t, fields, &names)
		slices.Sort(names)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			f, ok := fields[k]
			if !ok {
				return &fieldError{path: path.Child(k), msg: fmt.Sprintf("unknown field %s (known fields: %s)", errdef.Quote(k), strings.Join(names, ", "))}
			}
			if err := checkFields(m[k], f.Type, append(path, fieldpath.Elem{Key: k})); err != nil {
				return err
			}
		}
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			return fail("want a map, got %s", jsonKind(v))
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if err := checkFields(m[k], t.Elem(), append(path, fieldpath.Elem{Key: k})); err != nil {
				return err
			}
		}
	case reflect.Slice:
		l, ok := v.([]any)
		if !ok {
			return fail("want a list, got %s", jsonKind(v))
		}
		for i, e := range l {
			if err := checkFields(e, t.Elem(), append(path, fieldpath.Elem{IsList: true, Index: i})); err != nil {
				return err
			}
		}
	case reflect.String:
		switch v.(type) {
		case string:
		case bool, json.Number:
			return fail("want a string, got %s (quote it: Kubernetes tools read yes, no, on, off, y, n and numbers unquoted as such)", jsonKind(v))
		default:
			return fail("want a string, got %s", jsonKind(v))
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return fail("want true or false, got %s", jsonKind(v))
		}
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint64, reflect.Uint32, reflect.Uint:
		n, ok := v.(json.Number)
		if !ok {
			return fail("want an integer, got %s", jsonKind(v))
		}
		if _, err := n.Int64(); err != nil {
			return fail("want an integer, got %s", n)
		}
	case reflect.Float64, reflect.Float32:
		if _, ok := v.(json.Number); !ok {
			return fail("want a number, got %s", jsonKind(v))
		}
	}
	return nil
}

// structFields lists the JSON fields of a struct type, embedded structs
// flattened as encoding/json does.
func structFields(t reflect.Type, fields map[string]reflect.StructField, names *[]string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			structFields(f.Type, fields, names)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f
		*names = append(*names, name)
	}
}

func jsonKind(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "a map"
	case []any:
		return "a list"
	case string:
		return fmt.Sprintf("the string %s", errdef.Quote(v))
	case bool:
		return fmt.Sprintf("the boolean %v", v)
	case json.Number:
		return "the number " + v.String()
	default:
		return fmt.Sprintf("%T", v)
	}
}
