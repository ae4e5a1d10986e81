package manifests

import (
	"fmt"
	"math"
	"runtime"
	"strconv"
	"unicode/utf8"

	yamlv2 "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/yamlfile"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/nesting"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/parallel"
)

// docResult is the outcome of decoding one document of a stream.
type docResult struct {
	objs []Object
	err  error
}

// Documents of a stream are decoded in parallel, in up to GOMAXPROCS
// goroutines, when there are at least parallelMinDocs of them holding at
// least parallelMinBytes in all; below that, starting goroutines costs more
// than it saves.
const (
	parallelMinDocs  = 4
	parallelMinBytes = 32 << 10
)

// decodeDocs decodes every document of a stream with decode (doc i is
// document i+1 in messages). The outcome is what decoding them one after the
// other gives: callers take results in order and stop at the first error, so
// documents after a failed one may be left undecoded (their results are
// zero), and a panic of decode reaches the caller's goroutine.
func decodeDocs(name string, docs []yamlDoc, decode func(name string, i int, doc yamlDoc) ([]Object, error)) []docResult {
	res := make([]docResult, len(docs))
	size := 0
	for _, d := range docs {
		size += len(d.data)
	}
	workers := min(runtime.GOMAXPROCS(0), len(docs))
	if len(docs) < parallelMinDocs || size < parallelMinBytes {
		workers = 1
	}
	parallel.EachInOrder(len(docs), workers, func(i int) error {
		res[i].objs, res[i].err = decode(name, i, docs[i])
		return res[i].err
	})
	return res
}

// decodeDoc decodes document i (0-based) of a stream; counted: the caller
// knows that doc is within MaxDocumentNodes.
//
// YAML is read by go.yaml.in/yaml/v2, as sigs.k8s.io/yaml.YAMLToJSON reads
// it, and the result is converted straight into JSON values: the outcome is
// the same as converting the document to JSON with YAMLToJSON and decoding
// that (the reference semantics, as kubectl and Argo CD read manifests),
// without writing and parsing the JSON. The rare documents the direct
// conversion does not cover (see jsonValue) take that reference path.
// Documents of the block-style subset Helm and CRD files are written in
// are read by fastDecode first, which gives the same values several times
// faster and leaves everything else (and every error) to yaml.v2.
func decodeDoc(name string, i int, doc yamlDoc, counted bool) ([]Object, error) {
	if !counted {
		if n := yamlfile.StructureCount(doc.data); n > MaxDocumentNodes {
			return nil, fmt.Errorf("%w: %w", docErr(name, i+1, "document starting at line %d has %d structural characters (',' '[' '{' '-' ':' '?' newline), more than the limit of %d",
				doc.line, n, MaxDocumentNodes), errdef.ErrLimitExceeded)
		}
	}
	if v, ok := fastDecode(doc.data); ok {
		return flatten(name, i+1, v)
	}
	var v any
	if err := yamlv2.Unmarshal(doc.data, &v); err != nil {
		// YAMLToJSON returns this very error.
		return nil, docErr(name, i+1, "invalid YAML (document starts at line %d): %v", doc.line, err)
	}
	if !nesting.Within(v) {
		return nil, fmt.Errorf("%s: document %d (starting at line %d): %w: %w", name, i+1, doc.line, nesting.Error(), errdef.ErrInvalidInput)
	}
	if j, ok := jsonValue(v); ok {
		return flatten(name, i+1, j)
	}
	j, err := yaml.YAMLToJSON(doc.data)
	if err != nil {
		return nil, docErr(name, i+1, "invalid YAML (document starts at line %d): %v", doc.line, err)
	}
	return fromJSON(name, i+1, j)
}

// jsonValue converts a value decoded by yaml.v2 into the value that
// encoding it as JSON the way YAMLToJSON does (json.Marshal) and decoding
// that with fromJSON gives, or reports false for what it does not cover:
//
//   - numbers: integers become int64; a float64 becomes int64 when it is
//     integral and in range (json.Marshal writes it without a fraction or
//     exponent, so fromJSON parses it as an integer; -0 becomes 0); other
//     finite floats stay as they are (Go writes the shortest representation,
//     which parses back exactly). uint64 (integers above MaxInt64), NaN and
//     infinities are not covered.
//   - strings must be valid UTF-8 (json.Marshal replaces invalid bytes).
//   - mapping keys that are strings are kept; int, bool and float keys become
//     strings as YAMLToJSON converts them, unless two keys of a mapping end up
//     equal (YAMLToJSON then keeps one of them at random). Other keys (null,
//     uint64) are not covered: YAMLToJSON refuses them.
//   - any other type (a !!timestamp-tagged time.Time, say) is not covered.
//
// Sequences are converted in place; v must not be used on false.
func jsonValue(v any) (any, bool) {
	switch v := v.(type) {
	case nil, bool:
		return v, true
	case string:
		return v, utf8.ValidString(v)
	case int:
		return int64(v), true
	case int64:
		return v, true
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, false
		}
		if v == math.Trunc(v) && v >= -(1<<63) && v < 1<<63 {
			return int64(v), true
		}
		return v, true
	case []any:
		for i, e := range v {
			j, ok := jsonValue(e)
			if !ok {
				return nil, false
			}
			v[i] = j
		}
		return v, true
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			ks, ok := jsonKey(k)
			if !ok {
				return nil, false
			}
			j, ok := jsonValue(e)
			if !ok {
				return nil, false
			}
			m[ks] = j
		}
		if len(m) != len(v) {
			return nil, false // keys that became equal
		}
		return m, true
	default:
		return nil, false
	}
}

// jsonKey is the string YAMLToJSON makes of a mapping key (see
// sigs.k8s.io/yaml convertToJSONableObject).
func jsonKey(k any) (string, bool) {
	switch k := k.(type) {
	case string:
		return k, utf8.ValidString(k)
	case int:
		return strconv.Itoa(k), true
	case int64:
		return strconv.FormatInt(k, 10), true
	case bool:
		return strconv.FormatBool(k), true
	case float64:
		switch s := strconv.FormatFloat(k, 'g', -1, 32); s {
		case "+Inf":
			return ".inf", true
		case "-Inf":
			return "-.inf", true
		case "NaN":
			return ".nan", true
		default:
			return s, true
		}
	default:
		return "", false
	}
}
