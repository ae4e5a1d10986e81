package yamlfile

import (
	"bytes"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// StructureCount counts the bytes of a YAML or JSON text that can start or
// separate nodes (',' '[' '{' '-' ':' '?' and newlines). Every node but the
// first follows one of them (a block mapping in a sequence shares its '-'
// with its first key), so it bounds the node count from above, up to a small
// factor; it also counts these characters inside strings, which only makes it
// larger. One pass, no allocation: a cheap guard before a decoder whose memory
// grows with the node count.
//
// It runs over every chart's output (1 MB for a chart that renders its
// CRDs), so a long text is counted with bytes.Count, one vectorised pass
// per structural byte: seven of those are about three times faster than a
// table lookup per byte, which short texts keep.
func StructureCount(b []byte) int {
	n := 0
	if len(b) >= countByPasses {
		for i := range len(structuralBytes) {
			n += bytes.Count(b, []byte{structuralBytes[i]})
		}
		return n
	}
	for _, c := range b {
		n += int(structural[c])
	}
	return n
}

// countByPasses is the length from which StructureCount counts by passes
// of bytes.Count (below it, the calls cost more than the bytes).
const countByPasses = 512

// structuralBytes are the bytes StructureCount counts.
const structuralBytes = ",[{-:?\n"

// structural is 1 for the bytes StructureCount counts: a table lookup per
// byte is twice as fast as a switch.
var structural = func() (t [256]uint8) {
	for _, c := range []byte(structuralBytes) {
		t[c] = 1
	}
	return t
}()

var yamlStyleFloat = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)
})

// Plain resolves a plain (unquoted, untagged) scalar as go.yaml.in/yaml/v2
// does, and so sigs.k8s.io/yaml: nil, a bool, an int64 (or a uint64 past
// it), a float64 (±Inf and NaN included: the caller decides), or the text.
// A timestamp stays its text, as sigs.k8s.io/yaml keeps it.
func Plain(s string) any {
	if v, str := resolvePlain(s); !str {
		return v
	}
	return s
}

// resolvePlain is Plain, reporting a string as str (true) rather than as a
// value: boxing the text in an any allocates, and most scalars are text.
func resolvePlain(s string) (v any, str bool) {
	switch s {
	case "", "~", "null", "Null", "NULL":
		return nil, false
	case "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON":
		return true, false
	case "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF":
		return false, false
	case ".nan", ".NaN", ".NAN":
		return math.NaN(), false
	case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF":
		return math.Inf(1), false
	case "-.inf", "-.Inf", "-.INF":
		return math.Inf(-1), false
	}
	switch c := s[0]; {
	case c == '.':
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return f, false
		}
	case c == '+' || c == '-' || ('0' <= c && c <= '9'):
		if isTimestamp(s) {
			return nil, true
		}
		plain := strings.ReplaceAll(s, "_", "")
		if i, err := strconv.ParseInt(plain, 0, 64); err == nil {
			return i, false
		}
		if u, err := strconv.ParseUint(plain, 0, 64); err == nil {
			return u, false
		}
		if yamlStyleFloat().MatchString(plain) {
			if f, err := strconv.ParseFloat(plain, 64); err == nil {
				return f, false
			}
		}
		if b, ok := strings.CutPrefix(plain, "0b"); ok {
			if i, err := strconv.ParseInt(b, 2, 64); err == nil {
				return i, false
			}
			if u, err := strconv.ParseUint(b, 2, 64); err == nil {
				return u, false
			}
		} else if b, ok := strings.CutPrefix(plain, "-0b"); ok {
			if i, err := strconv.ParseInt("-"+b, 2, 64); err == nil {
				return i, false
			}
		}
	}
	return nil, true
}

// PlainString reports whether go.yaml.in/yaml/v2 resolves s, as a plain
// scalar, to a string: not to a null, a boolean, a number or a timestamp
// (which Plain keeps as its text). A string for which it is false must be
// quoted to be read back as a string.
func PlainString(s string) bool {
	if _, str := resolvePlain(s); !str {
		return false
	}
	c := s[0]
	return !(c == '+' || c == '-' || '0' <= c && c <= '9') || !isTimestamp(s)
}

// Key is a plain map key as sigs.k8s.io/yaml turns it into a JSON key: a
// boolean key (on, yes) is "true" or "false", a number its decimal form.
// ok is false for a key JSON cannot have (null).
func Key(s string) (key string, ok bool) {
	switch v := Plain(s).(type) {
	case nil:
		return "", false
	case bool:
		return strconv.FormatBool(v), true
	case int64:
		return strconv.FormatInt(v, 10), true
	case uint64:
		return strconv.FormatUint(v, 10), true
	case float64:
		f := strconv.FormatFloat(v, 'g', -1, 32)
		switch f {
		case "+Inf":
			f = ".inf"
		case "-Inf":
			f = "-.inf"
		case "NaN":
			f = ".nan"
		}
		return f, true
	case string:
		return v, true
	}
	return s, true
}

// The timestamp forms go.yaml.in/yaml/v2 reads in plain scalars.
var timestampFormats = []string{
	"2006-1-2T15:4:5.999999999Z07:00",
	"2006-1-2t15:4:5.999999999Z07:00",
	"2006-1-2 15:4:5.999999999",
	"2006-1-2",
}

// isTimestamp reports whether a plain scalar is a timestamp (which is not
// read as a number, "2001-12-14" minus nothing).
func isTimestamp(s string) bool {
	i := 0
	for ; i < len(s); i++ {
		if c := s[i]; c < '0' || c > '9' {
			break
		}
	}
	if i != 4 || i == len(s) || s[i] != '-' {
		return false
	}
	for _, format := range timestampFormats {
		if _, err := time.Parse(format, s); err == nil {
			return true
		}
	}
	return false
}
