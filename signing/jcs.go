package signing

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

// This file holds the two serialisations the normalisation algorithms end in.
// Both work on a tree decoded with json.Decoder.UseNumber, so the values are
// map[string]any, []any, string, json.Number, bool and nil.
//
// Numbers: OCM decodes descriptors into Go structs and generic maps, so every
// number it signs has been through a float64. We do the same: a number is
// parsed as an IEEE 754 double and written in the shortest form that reads
// back to the same double, as ECMAScript's Number.prototype.toString does
// (plain digits for 1e-6 <= |x| < 1e21, otherwise d.ddde±x). Consequences, and
// the limits of this canonicaliser: integers above 2^53 lose precision exactly
// as they do in OCM; numbers beyond the double range are refused; -0 is written
// as 0 (RFC 8785) or -0 (Go's encoding/json, used by jsonNormalisation/v1).

// appendCanonical appends v as RFC 8785 (JCS) canonical JSON: object members
// sorted by their UTF-16 code units, no insignificant whitespace, strings with
// only the escapes JSON requires (no HTML escaping), numbers as above.
func appendCanonical(b []byte, v any) ([]byte, error) {
	switch t := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, t), nil
	case string:
		return appendJCSString(b, t), nil
	case json.Number:
		return appendNumber(b, t, true)
	case []any:
		b = append(b, '[')
		for i, e := range t {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendCanonical(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return lessUTF16(keys[i], keys[j]) })
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJCSString(b, k)
			b = append(b, ':')
			var err error
			if b, err = appendCanonical(b, t[k]); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	default:
		return nil, fmt.Errorf("%w: cannot canonicalise a value of type %T", errdef.ErrInvalidInput, v)
	}
}

// lessUTF16 orders strings by UTF-16 code units, as RFC 8785 §3.2.3 requires.
// It differs from Go's byte order only for characters above U+FFFF against
// characters in U+E000..U+FFFF.
func lessUTF16(a, b string) bool {
	ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	for i := 0; i < len(ua) && i < len(ub); i++ {
		if ua[i] != ub[i] {
			return ua[i] < ub[i]
		}
	}
	return len(ua) < len(ub)
}

// appendJCSString writes s with the RFC 8785 escapes: \" \\ \b \f \n \r \t,
// other control characters as \u00xx, everything else as literal UTF-8.
func appendJCSString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = append(b, "\ufffd"...) // unreachable for decoded JSON: the decoder already replaced it
			} else {
				b = append(b, s[i:i+size]...)
			}
			i += size
			continue
		}
		switch c {
		case '"':
			b = append(b, '\\', '"')
		case '\\':
			b = append(b, '\\', '\\')
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			if c < 0x20 {
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			} else {
				b = append(b, c)
			}
		}
		i++
	}
	return append(b, '"')
}

// appendNumber writes n as a double in ECMAScript form. es6 selects how -0 is
// written: "0" (RFC 8785) or "-0" (Go's encoding/json).
func appendNumber(b []byte, n json.Number, es6 bool) ([]byte, error) {
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, fmt.Errorf("%w: number %s is not representable as a double", errdef.ErrInvalidDescriptor, n)
	}
	if f == 0 && es6 {
		return append(b, '0'), nil
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	start := len(b)
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// Go writes e-07 where ECMAScript writes e-7.
		if len(b)-start >= 4 && b[len(b)-4] == 'e' && b[len(b)-3] == '-' && b[len(b)-2] == '0' {
			b[len(b)-2] = b[len(b)-1]
			b = b[:len(b)-1]
		}
	}
	return b, nil
}

// appendEntries appends v in the "entry" form of jsonNormalisation/v1: every
// object becomes an array of single-member objects sorted by key (byte order),
// arrays stay arrays, strings are escaped as Go's encoding/json.Marshal does
// (HTML characters included), because that is what the OCM library produced.
// An empty object is written as [].
func appendEntries(b []byte, v any) ([]byte, error) {
	switch t := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, t), nil
	case string:
		s, err := json.Marshal(t)
		if err != nil {
			return nil, err
		}
		return append(b, s...), nil
	case json.Number:
		return appendNumber(b, t, false)
	case []any:
		b = append(b, '[')
		for i, e := range t {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendEntries(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b = append(b, '[')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			s, err := json.Marshal(k)
			if err != nil {
				return nil, err
			}
			b = append(append(append(b, '{'), s...), ':')
			if b, err = appendEntries(b, t[k]); err != nil {
				return nil, err
			}
			b = append(b, '}')
		}
		return append(b, ']'), nil
	default:
		return nil, fmt.Errorf("%w: cannot normalise a value of type %T", errdef.ErrInvalidInput, v)
	}
}
