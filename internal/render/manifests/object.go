package manifests

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	yamlv2 "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/yamlfile"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/nesting"
)

// Object is one Kubernetes object as decoded JSON: a map[string]any whose
// values are JSON-compatible (string, float64 or int64, bool, nil, []any and
// map[string]any). It is a plain alias so that every renderer and
// post-processor shares it without conversion.
type Object = map[string]any

// Bounds on the structure of what Decode reads, counted by yamlfile.StructureCount
// (an over-estimate of the number of YAML nodes). The YAML decoder needs
// some 130 bytes of heap per node while it works and the decoded objects
// about 50, so without them a small compressed archive of "[0,0,0,…]" or of
// tiny documents would exhaust memory long before the archive's byte limit.
// A 1 MiB CustomResourceDefinition counts about 35 000 (the API server
// refuses objects over 3 MiB anyway); Argo CD's own limit for directory
// applications is 10 MiB of manifests, about 400 000.
const (
	// MaxDocumentNodes bounds one YAML document.
	MaxDocumentNodes = 1 << 18
	// MaxStreamNodes bounds one call of Decode, and all files of one Render.
	MaxStreamNodes = 1 << 20
	// MaxObjects bounds the documents and objects of one call of Decode, and
	// of all files of one Render: decoding costs some 10 KiB of garbage and
	// 70 µs per document however small, so a stream of tiny documents is
	// expensive long before MaxStreamNodes.
	MaxObjects = 10_000
)

// Decode reads every object in data, a multi-document YAML stream or a JSON
// value (or a stream of JSON values). name identifies the source in error
// messages, typically a path inside the resource.
//
// Empty and comment-only documents are skipped. A top-level list, and a
// document of kind List, are flattened into their items. Every object must
// have a non-empty string apiVersion and kind. Integers decode as int64 and
// other numbers as float64. Errors name the file and the 1-based document
// index and wrap errdef.ErrInvalidInput.
//
// The structure of data is bounded before anything is decoded (see
// yamlfile.StructureCount): at most MaxDocumentNodes per document and MaxStreamNodes
// in all, and at most MaxObjects documents and objects; more wraps
// errdef.ErrLimitExceeded as well.
func Decode(name string, data []byte) ([]Object, error) {
	return DecodeWith(name, data, nil)
}

// DocumentHook sees every YAML document Decode decodes: doc is the
// document's text, decode decodes it (with Decode's bounds, errors and
// results). The hook returns what decode returns, or objects it kept from
// an earlier decode of the same text (a cache); it may be called from
// several goroutines at once. JSON streams do not reach it.
type DocumentHook func(doc []byte, decode func() ([]Object, error)) ([]Object, error)

// DecodeWith is Decode with hook (nil: none) around every YAML document.
func DecodeWith(name string, data []byte, hook DocumentHook) ([]Object, error) {
	return decodeWith(name, data, hook, -1)
}

// DecodeCounted is Decode of data whose structural characters the caller
// has counted already: nodes must be yamlfile.StructureCount(data) (a
// chart's crds/ file, counted once for the bound of the whole release and
// kept with the file), which every bound of Decode is then checked
// against instead of a count of its own. A negative nodes is counted here.
func DecodeCounted(name string, data []byte, nodes int) ([]Object, error) {
	return decodeWith(name, data, nil, nodes)
}

// DecodeCountedWith is DecodeWith of data whose structural characters the
// caller has counted already (see DecodeCounted).
func DecodeCountedWith(name string, data []byte, nodes int, hook DocumentHook) ([]Object, error) {
	return decodeWith(name, data, hook, nodes)
}

// decodeWith is DecodeWith; n, when not negative, is the StructureCount of
// data.
func decodeWith(name string, data []byte, hook DocumentHook, n int) ([]Object, error) {
	// The BOM's bytes are not structural: the count is the same.
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // UTF-8 BOM
	if n < 0 {
		n = yamlfile.StructureCount(data)
	}
	if n > MaxStreamNodes {
		return nil, fmt.Errorf("%s: %d structural characters (',' '[' '{' '-' ':' '?' newline), more than the limit of %d: %w: %w",
			name, n, MaxStreamNodes, errdef.ErrInvalidInput, errdef.ErrLimitExceeded)
	}
	if trimmed := bytes.TrimSpace(data); len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		objs, err := decodeJSONStream(name, trimmed)
		if err == nil || errors.Is(err, errdef.ErrLimitExceeded) {
			return objs, err
		}
		// Not a JSON stream after all (YAML flow style is a superset):
		// fall through to YAML, which gives the better error message.
	}
	docs := splitYAML(data)
	if len(docs) > MaxObjects {
		return nil, fmt.Errorf("%s: %d YAML documents, more than the limit of %d: %w: %w", name, len(docs), MaxObjects, errdef.ErrInvalidInput, errdef.ErrLimitExceeded)
	}
	var out []Object
	// A document is the text of its lines in data, and at most one newline
	// more (a "--- content" line's content, see splitYAML): a stream of
	// fewer than MaxDocumentNodes structural characters has no document
	// over the limit, so its documents are not counted again (a third pass
	// over a chart's CRDs, after Render's and this one).
	counted := n < MaxDocumentNodes
	decode := func(name string, i int, d yamlDoc) ([]Object, error) { return decodeDoc(name, i, d, counted) }
	if hook != nil {
		decode = func(name string, i int, d yamlDoc) ([]Object, error) {
			return hook(d.data, func() ([]Object, error) { return decodeDoc(name, i, d, counted) })
		}
	}
	for _, r := range decodeDocs(name, docs, decode) {
		if r.err != nil {
			return nil, r.err
		}
		if out = append(out, r.objs...); len(out) > MaxObjects {
			return nil, tooManyObjects(name)
		}
	}
	return out, nil
}

func tooManyObjects(name string) error {
	return fmt.Errorf("%s: more than %d objects: %w: %w", name, MaxObjects, errdef.ErrInvalidInput, errdef.ErrLimitExceeded)
}

func decodeJSONStream(name string, data []byte) ([]Object, error) {
	// One scan of the bytes for the nesting bound; only a stream that
	// opens too many brackets has its documents measured, to name the one.
	deep := nesting.CheckText(data) != nil
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out []Object
	for i := 1; ; i++ {
		var v any
		if err := dec.Decode(&v); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, docErr(name, i, "invalid JSON: %v", err)
		}
		if i > MaxObjects {
			return nil, fmt.Errorf("%s: more than %d JSON documents: %w: %w", name, MaxObjects, errdef.ErrInvalidInput, errdef.ErrLimitExceeded)
		}
		if deep && !nesting.Within(v) {
			return nil, fmt.Errorf("%s: document %d: %w: %w", name, i, nesting.Error(), errdef.ErrInvalidInput)
		}
		objs, err := flatten(name, i, normalize(v))
		if err != nil {
			return nil, err
		}
		if out = append(out, objs...); len(out) > MaxObjects {
			return nil, tooManyObjects(name)
		}
	}
}

// fromJSON decodes one document already converted to JSON.
func fromJSON(name string, doc int, j []byte) ([]Object, error) {
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, docErr(name, doc, "invalid document: %v", err)
	}
	return flatten(name, doc, normalize(v))
}

// flatten turns a decoded document into objects: null is skipped, arrays and
// List kinds are expanded, anything else must be a valid object.
func flatten(name string, doc int, v any) ([]Object, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case []any:
		var out []Object
		for i, item := range v {
			if item == nil {
				continue
			}
			objs, err := flattenItem(name, doc, fmt.Sprintf("item %d", i), item)
			if err != nil {
				return nil, err
			}
			out = append(out, objs...)
		}
		return out, nil
	case map[string]any:
		return flattenItem(name, doc, "", v)
	default:
		return nil, docErr(name, doc, "document is a %s, not an object", typeName(v))
	}
}

func flattenItem(name string, doc int, where string, v any) ([]Object, error) {
	prefix := ""
	if where != "" {
		prefix = where + ": "
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, docErr(name, doc, "%sis a %s, not an object", prefix, typeName(v))
	}
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	if kind == "List" && (apiVersion == "v1" || apiVersion == "") {
		items, ok := obj["items"].([]any)
		if !ok && obj["items"] != nil {
			return nil, docErr(name, doc, "%sList has items that are not a list", prefix)
		}
		var out []Object
		for i, item := range items {
			objs, err := flattenItem(name, doc, fmt.Sprintf("%sitem %d", prefix, i), item)
			if err != nil {
				return nil, err
			}
			out = append(out, objs...)
		}
		return out, nil
	}
	var missing []string
	if apiVersion == "" {
		missing = append(missing, "apiVersion")
	}
	if kind == "" {
		missing = append(missing, "kind")
	}
	if len(missing) > 0 {
		return nil, docErr(name, doc, "%sobject has no %s (is this a Kubernetes manifest?)", prefix, strings.Join(missing, " and no "))
	}
	return []Object{obj}, nil
}

func docErr(name string, doc int, format string, args ...any) error {
	return fmt.Errorf("%s: document %d: %s: %w", name, doc, fmt.Sprintf(format, args...), errdef.ErrInvalidInput)
}

func typeName(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	case int64, float64:
		return "number"
	case []any:
		return "list"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// normalize replaces json.Number with int64 (when integral and in range) or
// float64, recursively.
func normalize(v any) any {
	switch v := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			return i
		}
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return string(v) // cannot happen for a valid JSON number
		}
		return f
	case map[string]any:
		for k, e := range v {
			v[k] = normalize(e)
		}
		return v
	case []any:
		for i, e := range v {
			v[i] = normalize(e)
		}
		return v
	default:
		return v
	}
}

// yamlDoc is one document of a stream and the 1-based line it starts on.
type yamlDoc struct {
	data []byte
	line int
}

// splitYAML splits a YAML stream into documents at "---" lines, the way
// kubectl does: a separator is a line starting with "---" followed by
// nothing, whitespace or a comment, or by a space and the start of the next
// document's content (as in "--- |"). A "..." line ends a document. Text
// before the first separator that holds no content (blank lines, comments,
// directives) is not counted as a document.
func splitYAML(data []byte) []yamlDoc {
	var docs []yamlDoc
	start, lineNo := 1, 0
	first := true
	// The current document is head (the content of a "--- content" line
	// and a newline, or nil) followed by data[from:to].
	var head []byte
	from := 0
	cur := func(to int) []byte {
		if head == nil {
			return data[from:to:to]
		}
		return append(head, data[from:to]...)
	}
	flush := func(to int) {
		if d := cur(to); !(first && !hasContent(d)) {
			docs = append(docs, yamlDoc{data: d, line: start})
		}
		first = false
	}
	for pos := 0; pos < len(data); {
		lineNo++
		next := len(data)
		if i := bytes.IndexByte(data[pos:], '\n'); i >= 0 {
			next = pos + i + 1
		}
		body := bytes.TrimRight(data[pos:next], "\r\n")
		switch {
		case bytes.HasPrefix(body, []byte("---")):
			rest := body[3:]
			if len(rest) > 0 && rest[0] != ' ' && rest[0] != '\t' {
				break // "----" or "---x": an ordinary line
			}
			flush(pos)
			if r := bytes.TrimSpace(rest); len(r) > 0 && r[0] != '#' {
				start = lineNo
				c := bytes.TrimLeft(rest, " \t")
				head = append(make([]byte, 0, len(c)+1), c...)
				head = append(head, '\n')
			} else {
				start, head = lineNo+1, nil
			}
			pos, from = next, next
			continue
		case bytes.Equal(bytes.TrimRight(body, " \t"), []byte("...")):
			flush(pos)
			start, head = lineNo+1, nil
			pos, from = next, next
			continue
		}
		pos = next
	}
	if hasContent(cur(len(data))) || len(docs) == 0 {
		flush(len(data))
	}
	return docs
}

// hasContent reports whether b holds anything but blank lines, comments and
// directives.
func hasContent(b []byte) bool {
	for len(b) > 0 {
		l := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			l, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		l = bytes.TrimSpace(l)
		if len(l) > 0 && l[0] != '#' && l[0] != '%' {
			return true
		}
	}
	return false
}

// Encode writes objs to w as a YAML stream, each document preceded by
// "---\n", with map keys sorted. On an error nothing is written: the stream
// is written with one Write once every object is encoded. An object nested
// deeper than MaxEncodeDepth is an error wrapping errdef.ErrInvalidInput
// and errdef.ErrLimitExceeded (EncodeJSON, whose text grows linearly,
// writes it).
func Encode(w io.Writer, objs []Object) error {
	return encodeOnce(w, objs, false)
}

// marshalYAML gives what sigs.k8s.io/yaml.Marshal gives (json.Marshal, then
// JSONToYAML, which reads the JSON with a YAML reader and writes it as
// YAML), except that characters a YAML stream may not hold (see
// escapeForYAML) are escaped in the JSON first: the YAML reader refuses
// U+007F, U+0080 to U+009F, U+FFFE and U+FFFF, and reads U+0085 as a line
// break, folding it into a space.
//
// An object of the values Decode produces (see directYAML) is written by
// the YAML writer straight away: reading the JSON back gives the very same
// values, so the detour through JSON only cost time (half of encoding a
// large chart). Anything else takes the detour. The writer is writeYAML,
// which writes yaml.v2's text several times faster, or yaml.v2 itself for
// what writeYAML leaves to it (long or multi-line keys).
//
// Objects nested deeper than MaxEncodeDepth are refused (see there).
func marshalYAML(o Object) ([]byte, error) {
	if b, ok := writeYAML(o); ok {
		return b, nil
	}
	if !nesting.Within(map[string]any(o)) {
		return nil, errTooDeep()
	}
	if directYAML(o, 0) {
		if b, err := yamlv2.Marshal(o); err == nil {
			return b, nil
		}
	}
	return marshalYAMLViaJSON(o)
}

// MaxEncodeDepth bounds the nesting of an object Encode and EncodeJSON
// write: the one nesting bound of every document (package nesting).
// Block-style YAML indents each level by two spaces, so its text grows with
// the square of the depth: a 54 KB JSON object nested 9 000 levels deep is
// 81 MB of YAML, and a stream of them within MaxStreamNodes gigabytes. At
// this bound a stream of MaxStreamNodes is at most some 64 MB of YAML; the
// deepest object of the real-world charts (a CustomResourceDefinition of
// cert-manager) is nested 38 levels deep.
const MaxEncodeDepth = nesting.MaxDepth

// errTooDeep is the refusal of an object nested deeper than MaxEncodeDepth.
func errTooDeep() error {
	return fmt.Errorf("%w (%w)", nesting.Error(), errdef.ErrInvalidInput)
}

// marshalYAMLViaJSON is the reference path of marshalYAML.
func marshalYAMLViaJSON(o Object) ([]byte, error) {
	j, err := json.Marshal(o)
	if err != nil {
		return nil, fmt.Errorf("error marshaling into JSON: %w", err)
	}
	if !yamlAllowed(j) {
		j = escapeForYAML(j)
	}
	return yaml.JSONToYAML(j)
}

// Key identifies an object as "group/Kind/namespace/name" (the group is
// empty for the core API, the namespace for cluster-scoped or unnamespaced
// objects). It orders objects stably and compares object sets.
func Key(o Object) string {
	apiVersion, _ := o["apiVersion"].(string)
	kind, _ := o["kind"].(string)
	group := ""
	if i := strings.LastIndexByte(apiVersion, '/'); i >= 0 {
		group = apiVersion[:i]
	}
	var namespace, name string
	if md, ok := o["metadata"].(map[string]any); ok {
		namespace, _ = md["namespace"].(string)
		name, _ = md["name"].(string)
	}
	return group + "/" + kind + "/" + namespace + "/" + name
}

// maxDirectKey is the longest mapping key directYAML takes (in bytes): its
// JSON text, escapes and quotes included, stays within maxJSONKey, the
// longest key the JSON detour accepts (longer ones are its errors).
const maxDirectKey = (maxJSONKey - 2) / 6

// directYAML reports whether v holds only values that encoding as JSON and
// reading that back with the YAML reader (JSONToYAML) returns unchanged, so
// that the YAML writer gives the same text for v itself: nil, booleans,
// valid UTF-8 strings, int and int64, finite floats that are not integral
// (json.Marshal writes an integral one as an integer, which reads back as an
// int that the writer formats differently), non-nil []any and
// map[string]any (a nil one is JSON null, which the writer would write as
// [] or {}) with valid UTF-8 keys of at most maxDirectKey bytes. Structs,
// typed maps and slices and the like take the JSON detour: they encode by
// their JSON tags. depth guards the recursion (Decode's objects are bounded
// far below it).
func directYAML(v any, depth int) bool {
	if depth > 10_000 {
		return false
	}
	switch v := v.(type) {
	case nil, bool, int, int64:
		return true
	case string:
		return utf8.ValidString(v)
	case float64:
		return !math.IsNaN(v) && !math.IsInf(v, 0) && v != math.Trunc(v)
	case []any:
		if v == nil {
			return false
		}
		for _, e := range v {
			if !directYAML(e, depth+1) {
				return false
			}
		}
		return true
	case map[string]any:
		if v == nil {
			return false
		}
		for k, e := range v {
			if len(k) > maxDirectKey || !utf8.ValidString(k) || !directYAML(e, depth+1) {
				return false
			}
		}
		return true
	default:
		return false
	}
}

// DeepCopy copies a JSON-compatible value (an Object, a map[string]any, a
// []any and what they hold): maps and lists are new, scalars shared. The
// one deep copy of the plugin's object trees (values, parameters, objects a
// plan carries).
func DeepCopy[T any](v T) T {
	c, _ := deepCopy(any(v)).(T) // nil stays nil
	return c
}

func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = deepCopy(e)
		}
		return out
	case []Object:
		out := make([]Object, len(v))
		for i, o := range v {
			out[i] = deepCopy(o).(Object)
		}
		return out
	}
	return v
}
