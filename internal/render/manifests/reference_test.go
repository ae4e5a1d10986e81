package manifests_test

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

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/yamlfile"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
)

// This file keeps the original implementation of manifests.Decode (before it
// read YAML straight into objects, split streams without copying and decoded
// documents in parallel) as the reference the fuzz tests compare Decode
// with: YAML converted to JSON by sigs.k8s.io/yaml.YAMLToJSON and decoded by
// encoding/json, one document after the other.

// refDecode is the original Decode.
func refDecode(name string, data []byte) ([]manifests.Object, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // UTF-8 BOM
	if n := yamlfile.StructureCount(data); n > manifests.MaxStreamNodes {
		return nil, fmt.Errorf("%s: %d structural characters (',' '[' '{' '-' ':' '?' newline), more than the limit of %d: %w: %w",
			name, n, manifests.MaxStreamNodes, errdef.ErrInvalidInput, errdef.ErrLimitExceeded)
	}
	if trimmed := bytes.TrimSpace(data); len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		if objs, err := refDecodeJSONStream(name, trimmed); err == nil {
			return objs, nil
		}
		// Not a JSON stream after all (YAML flow style is a superset):
		// fall through to YAML, which gives the better error message.
	}
	docs := refSplitYAML(data)
	if len(docs) > manifests.MaxObjects {
		return nil, fmt.Errorf("%s: %d YAML documents, more than the limit of %d: %w: %w", name, len(docs), manifests.MaxObjects, errdef.ErrInvalidInput, errdef.ErrLimitExceeded)
	}
	var out []manifests.Object
	for i, doc := range docs {
		if n := yamlfile.StructureCount(doc.data); n > manifests.MaxDocumentNodes {
			return nil, fmt.Errorf("%w: %w", refDocErr(name, i+1, "document starting at line %d has %d structural characters (',' '[' '{' '-' ':' '?' newline), more than the limit of %d",
				doc.line, n, manifests.MaxDocumentNodes), errdef.ErrLimitExceeded)
		}
		j, err := yaml.YAMLToJSON(doc.data)
		if err != nil {
			return nil, refDocErr(name, i+1, "invalid YAML (document starts at line %d): %v", doc.line, err)
		}
		objs, err := refFromJSON(name, i+1, j)
		if err != nil {
			return nil, err
		}
		if out = append(out, objs...); len(out) > manifests.MaxObjects {
			return nil, refTooManyObjects(name)
		}
	}
	return out, nil
}

func refTooManyObjects(name string) error {
	return fmt.Errorf("%s: more than %d objects: %w: %w", name, manifests.MaxObjects, errdef.ErrInvalidInput, errdef.ErrLimitExceeded)
}

func refDecodeJSONStream(name string, data []byte) ([]manifests.Object, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out []manifests.Object
	for i := 1; ; i++ {
		var v any
		if err := dec.Decode(&v); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, refDocErr(name, i, "invalid JSON: %v", err)
		}
		if i > manifests.MaxObjects {
			return nil, fmt.Errorf("%s: more than %d JSON documents: %w: %w", name, manifests.MaxObjects, errdef.ErrInvalidInput, errdef.ErrLimitExceeded)
		}
		objs, err := refFlatten(name, i, refNormalize(v))
		if err != nil {
			return nil, err
		}
		if out = append(out, objs...); len(out) > manifests.MaxObjects {
			return nil, refTooManyObjects(name)
		}
	}
}

// refFromJSON decodes one document already converted to JSON.
func refFromJSON(name string, doc int, j []byte) ([]manifests.Object, error) {
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, refDocErr(name, doc, "invalid document: %v", err)
	}
	return refFlatten(name, doc, refNormalize(v))
}

// refFlatten turns a decoded document into objects: null is skipped, arrays and
// List kinds are expanded, anything else must be a valid object.
func refFlatten(name string, doc int, v any) ([]manifests.Object, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case []any:
		var out []manifests.Object
		for i, item := range v {
			if item == nil {
				continue
			}
			objs, err := refFlattenItem(name, doc, fmt.Sprintf("item %d", i), item)
			if err != nil {
				return nil, err
			}
			out = append(out, objs...)
		}
		return out, nil
	case map[string]any:
		return refFlattenItem(name, doc, "", v)
	default:
		return nil, refDocErr(name, doc, "document is a %s, not an object", refTypeName(v))
	}
}

func refFlattenItem(name string, doc int, where string, v any) ([]manifests.Object, error) {
	prefix := ""
	if where != "" {
		prefix = where + ": "
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, refDocErr(name, doc, "%sis a %s, not an object", prefix, refTypeName(v))
	}
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	if kind == "List" && (apiVersion == "v1" || apiVersion == "") {
		items, ok := obj["items"].([]any)
		if !ok && obj["items"] != nil {
			return nil, refDocErr(name, doc, "%sList has items that are not a list", prefix)
		}
		var out []manifests.Object
		for i, item := range items {
			objs, err := refFlattenItem(name, doc, fmt.Sprintf("%sitem %d", prefix, i), item)
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
		return nil, refDocErr(name, doc, "%sobject has no %s (is this a Kubernetes manifest?)", prefix, strings.Join(missing, " and no "))
	}
	return []manifests.Object{obj}, nil
}

func refDocErr(name string, doc int, format string, args ...any) error {
	return fmt.Errorf("%s: document %d: %s: %w", name, doc, fmt.Sprintf(format, args...), errdef.ErrInvalidInput)
}

func refTypeName(v any) string {
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

// refNormalize replaces json.Number with int64 (when integral and in range) or
// float64, recursively.
func refNormalize(v any) any {
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
			v[k] = refNormalize(e)
		}
		return v
	case []any:
		for i, e := range v {
			v[i] = refNormalize(e)
		}
		return v
	default:
		return v
	}
}

// refYamlDoc is one document of a stream and the 1-based line it starts on.
type refYamlDoc struct {
	data []byte
	line int
}

// refSplitYAML splits a YAML stream into documents at "---" lines, the way
// kubectl does: a separator is a line starting with "---" followed by
// nothing, whitespace or a comment, or by a space and the start of the next
// document's content (as in "--- |"). A "..." line ends a document. Text
// before the first separator that holds no content (blank lines, comments,
// directives) is not counted as a document.
func refSplitYAML(data []byte) []refYamlDoc {
	var docs []refYamlDoc
	var cur bytes.Buffer
	start, lineNo := 1, 0
	first := true
	flush := func(next int) {
		if !(first && !refHasContent(cur.Bytes())) {
			docs = append(docs, refYamlDoc{data: bytes.Clone(cur.Bytes()), line: start})
		}
		first = false
		cur.Reset()
		start = next
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), math.MaxInt32)
	sc.Split(refScanLinesKeepEOL)
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
	if refHasContent(cur.Bytes()) || len(docs) == 0 {
		flush(lineNo + 1)
	}
	return docs
}

// refHasContent reports whether b holds anything but blank lines, comments and
// directives.
func refHasContent(b []byte) bool {
	for _, l := range bytes.Split(b, []byte("\n")) {
		l = bytes.TrimSpace(l)
		if len(l) > 0 && l[0] != '#' && l[0] != '%' {
			return true
		}
	}
	return false
}

// refScanLinesKeepEOL is bufio.ScanLines that keeps the line terminators, so a
// document's bytes are passed on unchanged.
func refScanLinesKeepEOL(data []byte, atEOF bool) (int, []byte, error) {
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
