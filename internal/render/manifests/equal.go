package manifests

import "math"

// Equal reports whether v, any value, is exactly kept, a JSON-compatible
// value as Decode gives it (string, float64, int64, bool, nil, []any and
// map[string]any): the same types all the way down (an int64 is not a
// float64 of the same value, nor a map[string]string a map[string]any),
// the same values, floats bit for bit (-0 is not 0; NaN is never equal). So
// when Equal(kept, v), v encodes (Encode, EncodeJSON) to kept's text. It
// never panics, whatever v holds.
func Equal(kept, v any) bool {
	switch k := kept.(type) {
	case map[string]any:
		m, ok := v.(map[string]any)
		if !ok || m == nil || len(m) != len(k) {
			return false
		}
		for key, e := range k {
			f, ok := m[key]
			if !ok || !Equal(e, f) {
				return false
			}
		}
		return true
	case []any:
		l, ok := v.([]any)
		if !ok || l == nil || len(l) != len(k) {
			return false
		}
		for i, e := range k {
			if !Equal(e, l[i]) {
				return false
			}
		}
		return true
	case string:
		s, ok := v.(string)
		return ok && s == k
	case int64:
		n, ok := v.(int64)
		return ok && n == k
	case float64:
		f, ok := v.(float64)
		return ok && math.Float64bits(f) == math.Float64bits(k) && !math.IsNaN(k)
	case bool:
		b, ok := v.(bool)
		return ok && b == k
	case nil:
		return v == nil
	}
	return false
}
