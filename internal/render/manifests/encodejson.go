package manifests

import (
	"bytes"
	"io"
	"unicode/utf8"
)

// maxJSONKey is the longest mapping key, in characters of its JSON text with
// the quotes, that a YAML reader accepts in a JSON document:
// go.yaml.in/yaml/v2 (behind sigs.k8s.io/yaml, which Argo CD, kubectl and
// Decode use) refuses an implicit key longer than 1024 characters, and in a
// YAML stream JSON is read as flow style, where every key is implicit.
const maxJSONKey = 1024

// EncodeJSON writes objs to w as a stream of JSON documents that YAML readers
// read as well: for each object, in order, a line "---", then the object as
// compact JSON on one line, then a newline.
//
// The JSON is what encoding/json writes with HTML escaping off: map keys
// sorted, no insignificant whitespace, '<', '>' and '&' as themselves,
// integers as integers and floats in Go's shortest form. A JSON document is
// a single line (encoding/json escapes line breaks, U+2028 and U+2029 inside
// strings), never "---", so a reader that splits the stream at "---" lines
// (Argo CD's kube.SplitYAML with k8s.io/apimachinery's YAMLOrJSONDecoder,
// kubectl, Decode) sees one document per object. Characters that YAML does
// not allow in a stream (U+007F, U+0080 to U+009F — U+0085 is a YAML line
// break — U+FFFE and U+FFFF) are written as \u escapes, which JSON and YAML
// both read back.
//
// Decoding the stream (with Decode, or any YAML or JSON reader) gives the
// same values as decoding what Encode writes. An object EncodeJSON cannot
// write so that YAML readers read it is an error (wrapping
// errdef.ErrInvalidInput): one with a mapping key longer than 1024
// characters as JSON, quotes included, which Encode refuses as well. So are
// values encoding/json refuses (NaN, infinities, channels, ...). On any
// error EncodeJSON writes nothing to w: the stream is written with one Write
// once every object is encoded.
func EncodeJSON(w io.Writer, objs []Object) error {
	return encodeOnce(w, objs, true)
}

// yamlAllowed reports whether JSON text b holds none of the characters
// escapeForYAML escapes. They are all outside ASCII but U+007F, so they
// only occur inside strings.
func yamlAllowed(b []byte) bool {
	if bytes.IndexByte(b, 0x7f) >= 0 {
		return false
	}
	// U+0080 to U+009F are C2 80 to C2 9F in UTF-8.
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], 0xc2)
		if j < 0 {
			break
		}
		if i += j + 1; i < len(b) && b[i] >= 0x80 && b[i] <= 0x9f {
			return false
		}
	}
	// U+FFFE and U+FFFF are EF BF BE and EF BF BF.
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], 0xef)
		if j < 0 {
			break
		}
		if i += j + 1; i+1 < len(b) && b[i] == 0xbf && (b[i+1] == 0xbe || b[i+1] == 0xbf) {
			return false
		}
	}
	return true
}

// escapeForYAML returns JSON text b with U+007F, U+0080 to U+009F, U+FFFE
// and U+FFFF written as \u escapes.
func escapeForYAML(b []byte) []byte {
	const hex = "0123456789abcdef"
	out := make([]byte, 0, len(b)+32)
	for i := 0; i < len(b); i++ {
		var r int
		switch c := b[i]; {
		case c == 0x7f:
			r = 0x7f
		case c == 0xc2 && i+1 < len(b) && b[i+1] >= 0x80 && b[i+1] <= 0x9f:
			r = int(b[i+1])
			i++
		case c == 0xef && i+2 < len(b) && b[i+1] == 0xbf && (b[i+2] == 0xbe || b[i+2] == 0xbf):
			r = 0xfffe + int(b[i+2]-0xbe)
			i += 2
		default:
			out = append(out, c)
			continue
		}
		out = append(out, '\\', 'u', hex[r>>12], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
	}
	return out
}

// longKey returns the length in characters of the first object key in JSON
// text b whose JSON text, quotes included, is longer than maxJSONKey
// characters, or 0.
func longKey(b []byte) int {
	if len(b) <= maxJSONKey {
		return 0
	}
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return 0
		}
		open := i + j
		// The closing quote is the next one not escaped by an odd number
		// of backslashes (in JSON text, backslashes only occur in strings,
		// each starting an escape).
		end := open + 1
		for {
			k := bytes.IndexByte(b[end:], '"')
			if k < 0 {
				return 0 // not JSON: cannot happen
			}
			end += k
			n := 0
			for n < end-open-1 && b[end-1-n] == '\\' {
				n++
			}
			if n%2 == 0 {
				break
			}
			end++
		}
		if end+1-open > maxJSONKey && end+1 < len(b) && b[end+1] == ':' {
			if n := utf8.RuneCount(b[open : end+1]); n > maxJSONKey {
				return n
			}
		}
		i = end + 1
	}
}
