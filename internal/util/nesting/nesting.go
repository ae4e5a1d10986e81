// Package nesting holds the one bound on how deeply a document may nest.
// Every document the sidecar reads from a tenant or a publisher (values,
// instance parameters, deployment definitions, config resources,
// descriptors, manifests, RGDs) and every object it emits, as YAML or as
// JSON, is at most MaxDepth levels of maps and lists deep; deeper input is
// refused before the work that grows with its depth is done, with an error
// that names the bound.
//
// Why one bound: the YAML and JSON decoders take 10,000 levels, and code
// that keeps a field path per node (explanations, strict decoding, values
// history) pays for each node with its depth: input of 40 KB nested 8,000
// deep cost hundreds of MiB. Block-style YAML output grows with the square
// of the depth too. Real documents stay far below: the deepest object of
// the real-world charts (a cert-manager CustomResourceDefinition) is nested
// 38 levels deep.
package nesting

import (
	"fmt"
	"reflect"

	yaml "go.yaml.in/yaml/v3"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

// MaxDepth is the most levels of maps and lists a document may nest: a
// scalar is 0 levels deep, a map or a list one more than its deepest
// element (an empty one: 1). A Kubernetes object whose values nest 127
// levels below it is 128 deep.
const MaxDepth = 128

// Error is the refusal of a document nested deeper than MaxDepth; it
// matches errdef.ErrLimitExceeded.
func Error() error { return errTooDeep }

var errTooDeep = &tooDeep{}

type tooDeep struct{}

func (*tooDeep) Error() string {
	return fmt.Sprintf("nested more than %d levels deep (maps and lists), the nesting limit of every document: %v", MaxDepth, errdef.ErrLimitExceeded)
}

func (*tooDeep) Is(target error) bool { return target == errdef.ErrLimitExceeded }

// Check returns Error() when v, a decoded document, nests deeper than
// MaxDepth. It follows what decoders produce (map[string]any, []any,
// map[any]any) quickly and any other map, slice, array, struct, pointer or
// interface by reflection (a struct is one level, as the map it was
// decoded from). Its work is bounded by v's size, its recursion by
// MaxDepth.
func Check(v any) error {
	if deeper(v, 0) {
		return errTooDeep
	}
	return nil
}

// Within reports whether v nests at most MaxDepth levels deep (see Check).
func Within(v any) bool { return !deeper(v, 0) }

// deeper reports whether v, found under depth collections, nests past
// MaxDepth in all.
func deeper(v any, depth int) bool {
	switch v := v.(type) {
	case nil, string, bool, int, int64, float64, uint64, []byte:
		return false
	case map[string]any:
		if depth++; depth > MaxDepth {
			return true
		}
		for _, e := range v {
			if deeper(e, depth) {
				return true
			}
		}
		return false
	case []any:
		if depth++; depth > MaxDepth {
			return true
		}
		for _, e := range v {
			if deeper(e, depth) {
				return true
			}
		}
		return false
	case map[any]any:
		if depth++; depth > MaxDepth {
			return true
		}
		for k, e := range v {
			if deeper(k, depth) || deeper(e, depth) {
				return true
			}
		}
		return false
	}
	return deeperValue(reflect.ValueOf(v), depth)
}

// deeperValue is deeper for the types it does not know by name (named map
// types such as Helm's chartutil.Values, typed slices, structs).
func deeperValue(v reflect.Value, depth int) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return false
		}
		if depth > MaxDepth { // a pointer cycle ends here too
			return true
		}
		e := v.Elem()
		if e.CanInterface() {
			return deeper(e.Interface(), depth)
		}
		return deeperValue(e, depth)
	case reflect.Map:
		if depth++; depth > MaxDepth {
			return true
		}
		for it := v.MapRange(); it.Next(); {
			if deeperElem(it.Key(), depth) || deeperElem(it.Value(), depth) {
				return true
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return false // bytes
		}
		if depth++; depth > MaxDepth {
			return true
		}
		for i := range v.Len() {
			if deeperElem(v.Index(i), depth) {
				return true
			}
		}
	case reflect.Struct:
		if depth++; depth > MaxDepth {
			return true
		}
		for i := range v.NumField() {
			if deeperElem(v.Field(i), depth) {
				return true
			}
		}
	}
	return false
}

func deeperElem(e reflect.Value, depth int) bool {
	if e.CanInterface() {
		return deeper(e.Interface(), depth)
	}
	return deeperValue(e, depth)
}

// CheckNode returns Error() when the YAML document n nests deeper than
// MaxDepth, aliases expanded (an alias is as deep as what it names; each
// anchored node is measured once, so the work is linear in the document's
// nodes). A cycle of aliases is refused as too deep.
func CheckNode(n *yaml.Node) error {
	m := nodeMeter{depths: map[*yaml.Node]int{}}
	if m.depth(n, 0) > MaxDepth {
		return errTooDeep
	}
	return nil
}

type nodeMeter struct {
	depths map[*yaml.Node]int // of anchored nodes measured (inProgress: being measured)
}

const inProgress = -1

// depth is the nesting of n (0 for a scalar), or more than MaxDepth as
// soon as that is certain; above is how deep n sits.
func (m *nodeMeter) depth(n *yaml.Node, above int) int {
	if n == nil {
		return 0
	}
	switch n.Kind {
	case yaml.DocumentNode:
		d := 0
		for _, c := range n.Content {
			d = max(d, m.depth(c, above))
		}
		return d
	case yaml.AliasNode:
		return m.anchored(n.Alias, above)
	case yaml.MappingNode, yaml.SequenceNode:
		if n.Anchor != "" {
			return m.anchored(n, above)
		}
		return m.collection(n, above)
	}
	return 0
}

// anchored measures a node aliases may name, once.
func (m *nodeMeter) anchored(n *yaml.Node, above int) int {
	if n == nil {
		return 0
	}
	if d, ok := m.depths[n]; ok {
		if d == inProgress {
			return MaxDepth + 1 // it contains itself
		}
		return d
	}
	if n.Kind != yaml.MappingNode && n.Kind != yaml.SequenceNode {
		return m.depth(n, above)
	}
	m.depths[n] = inProgress
	// Measured from the top: its depth does not depend on where it sits,
	// and the result is reused wherever an alias names it.
	d := m.collection(n, 0)
	m.depths[n] = d
	return d
}

func (m *nodeMeter) collection(n *yaml.Node, above int) int {
	if above+1 > MaxDepth {
		return MaxDepth + 1
	}
	d := 0
	for _, c := range n.Content {
		d = max(d, m.depth(c, above+1))
		if above+1+d > MaxDepth {
			break
		}
	}
	return d + 1
}

// CheckText returns Error() when the JSON (or YAML flow-style) text b opens
// more than MaxDepth brackets ('[' and '{' outside strings) before closing
// them: a scan of the bytes, before a decoder builds anything. Malformed
// text is left to the decoder. For block-style YAML, measure the decoded
// document (CheckNode, Check) instead.
func CheckText(b []byte) error {
	depth := 0
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			if depth++; depth > MaxDepth {
				return errTooDeep
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return nil
}
