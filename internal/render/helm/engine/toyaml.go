package engine

import (
	"encoding/json"
	"math"
	"unicode/utf8"

	yamlv2 "go.yaml.in/yaml/v2"
	"helm.sh/helm/v4/pkg/chart/common"
	"sigs.k8s.io/yaml"
)

// argocd-ocm-plugin: marshalYAML is sigs.k8s.io/yaml.Marshal(v), the
// function behind toYaml, with the same bytes. That Marshal encodes v as
// JSON, reads the JSON back with go.yaml.in/yaml/v2 and marshals what it
// read with the same package: two of its three passes are only there to
// give yaml.v2 its own number types. For a v made of what Helm's values
// and sprig's dict and list hold (maps of strings, lists, strings, bools,
// nil, numbers), yamlShape builds what that reading would give directly,
// and only the last pass runs: toYaml was 6 % of a warm render of
// ingress-nginx and cert-manager. Anything else, or anything the round trip
// changes or refuses (a string yaml.v2 would not read back as it is, a
// cycle, NaN), takes the round trip itself.
func marshalYAML(v any) ([]byte, error) {
	if shaped, ok := yamlShape(v, 0); ok {
		return yamlv2.Marshal(shaped)
	}
	return yaml.Marshal(v)
}

// maxShapeDepth bounds yamlShape's recursion; deeper values (a cycle made
// with set, say) take the round trip, which refuses cycles.
const maxShapeDepth = 100

// yamlShape is what yaml.v2 decodes json.Marshal(v) into, when that is
// certain without encoding: ok is false for anything else.
func yamlShape(v any, depth int) (shaped any, ok bool) {
	if depth > maxShapeDepth {
		return nil, false
	}
	switch x := v.(type) {
	case nil:
		return nil, true
	case string:
		return x, readsBack(x)
	case bool:
		return x, true
	case int:
		return x, true
	case int64:
		return int(x), true // yaml.v2 reads digits that fit an int as an int (64-bit platforms)
	case float64:
		return floatShape(x)
	case map[string]any:
		return mapShape(x, depth)
	case common.Values:
		return mapShape(x, depth)
	case []any:
		if x == nil {
			return nil, true // json: null
		}
		l := make([]any, len(x))
		for i, e := range x {
			s, ok := yamlShape(e, depth+1)
			if !ok {
				return nil, false
			}
			l[i] = s
		}
		return l, true
	case []string:
		if x == nil {
			return nil, true
		}
		l := make([]any, len(x))
		for i, e := range x {
			if !readsBack(e) {
				return nil, false
			}
			l[i] = e
		}
		return l, true
	}
	return nil, false
}

func mapShape(x map[string]any, depth int) (any, bool) {
	if x == nil {
		return nil, true // json: null
	}
	m := make(map[any]any, len(x))
	for k, e := range x {
		// "<<" is yaml.v2's merge key: left to the round trip.
		if k == "<<" || !readsBack(k) {
			return nil, false
		}
		s, ok := yamlShape(e, depth+1)
		if !ok {
			return nil, false
		}
		m[k] = s
	}
	return m, true
}

// floatShape: json.Marshal prints an integral float64 below 1e21 as its
// digits, which yaml.v2 reads as an int when it fits one (below 1e15 it
// certainly does, exactly); other numbers are read as yaml.v2 reads
// json.Marshal's text of them. NaN and infinities fail json.Marshal: the
// round trip gives that error.
func floatShape(f float64) (any, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, false
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return int(f), true
	}
	text, err := json.Marshal(f)
	if err != nil {
		return nil, false
	}
	var n any
	if err := yamlv2.Unmarshal(text, &n); err != nil {
		return nil, false
	}
	return n, true
}

// readsBack reports whether yaml.v2 reads the JSON text of s back as s
// itself: valid UTF-8 (json.Marshal replaces invalid bytes) of characters
// yaml.v2 accepts in its input, which json.Marshal leaves unescaped above
// U+001F (DEL, C1 controls and U+FEFF make yaml.v2 refuse the document;
// U+0085 is a YAML line break, folded inside a quoted scalar). Control
// characters below U+0020 other than tab and newlines are left to the
// round trip as well.
func readsBack(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c < 0x7f || c == '\t' || c == '\n' || c == '\r' {
				i++
				continue
			}
			return false
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return false
		case r >= 0xA0 && r <= 0xD7FF, r >= 0xE000 && r <= 0xFFFD && r != 0xFEFF, r >= 0x10000:
		default:
			return false
		}
		i += size
	}
	return true
}
