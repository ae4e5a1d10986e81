package manifests

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/errdef"
)

// Object is one Kubernetes object as decoded JSON: a map[string]any whose
// values are JSON-compatible (string, float64 or int64, bool, nil, []any and
// map[string]any). It is a plain alias so that every renderer and
// post-processor shares it without conversion.
type Object = map[string]any

// Decode reads every object in data, a multi-document YAML stream or a JSON
// value (or a stream of JSON values). name identifies the source in error
// messages, typically a path inside the resource.
//
// Empty and comment-only documents are skipped. A top-level list, and a
// document of kind List, are flattened into their items. Every object must
// have a non-empty string apiVersion and kind. Integers decode as int64 and
// other numbers as float64. Errors name the file and the 1-based document
// index and wrap errdef.ErrInvalidInput.
func Decode(name string, data []byte) ([]Object, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // UTF-8 BOM
	if trimmed := bytes.TrimSpace(data); len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		if objs, err := decodeJSONStream(name, trimmed); err == nil {
			return objs, nil
		}
		// Not a JSON stream after all (YAML flow style is a superset):
		// fall through to YAML, which gives the better error message.
	}
	var out []Object
	for i, doc := range splitYAML(data) {
		j, err := yaml.YAMLToJSON(doc.data)
		if err != nil {
			return nil, docErr(name, i+1, "invalid YAML (document starts at line %d): %v", doc.line, err)
		}
		objs, err := fromJSON(name, i+1, j)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

func decodeJSONStream(name string, data []byte) ([]Object, error) {
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
		objs, err := flatten(name, i, normalize(v))
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
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
	var cur bytes.Buffer
	start, lineNo := 1, 0
	first := true
	flush := func(next int) {
		if !(first && !hasContent(cur.Bytes())) {
			docs = append(docs, yamlDoc{data: bytes.Clone(cur.Bytes()), line: start})
		}
		first = false
		cur.Reset()
		start = next
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), math.MaxInt32)
	sc.Split(scanLinesKeepEOL)
	for sc.Scan() {
		lineNo++
		line := sc.Bytes()
		body := bytes.TrimRight(line, "\r\n")
		switch {
		case bytes.HasPrefix(body, []byte("---")):
			rest := body[3:]
			if len(rest) > 0 && rest[0] != ' ' && rest[0] != '\t' {
				break // "----" or "---x": an ordinary line
			}
			if r := bytes.TrimSpace(rest); len(r) > 0 && r[0] != '#' {
				flush(lineNo)
				cur.Write(bytes.TrimLeft(rest, " \t"))
				cur.WriteByte('\n')
			} else {
				flush(lineNo + 1)
			}
			continue
		case bytes.Equal(bytes.TrimRight(body, " \t"), []byte("...")):
			flush(lineNo + 1)
			continue
		}
		cur.Write(line)
	}
	if hasContent(cur.Bytes()) || len(docs) == 0 {
		flush(lineNo + 1)
	}
	return docs
}

// hasContent reports whether b holds anything but blank lines, comments and
// directives.
func hasContent(b []byte) bool {
	for _, l := range bytes.Split(b, []byte("\n")) {
		l = bytes.TrimSpace(l)
		if len(l) > 0 && l[0] != '#' && l[0] != '%' {
			return true
		}
	}
	return false
}

// scanLinesKeepEOL is bufio.ScanLines that keeps the line terminators, so a
// document's bytes are passed on unchanged.
func scanLinesKeepEOL(data []byte, atEOF bool) (int, []byte, error) {
	if atEOF && len(data) == 0 {
		return 0, nil, nil
	}
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i+1], nil
	}
	if atEOF {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// Encode writes objs to w as a YAML stream, each document preceded by
// "---\n", with map keys sorted.
func Encode(w io.Writer, objs []Object) error {
	for i, o := range objs {
		b, err := yaml.Marshal(o)
		if err != nil {
			return fmt.Errorf("encoding object %d (%s): %w", i, Key(o), err)
		}
		if _, err := io.WriteString(w, "---\n"); err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
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
