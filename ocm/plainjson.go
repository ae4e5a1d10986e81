package ocm

import (
	"bytes"
	"encoding/json"
)

// Descriptors in an OCI registry are JSON (the OCM CLI writes them with
// encoding/json), and DecodeDescriptor turned them into JSON again through
// the YAML decoder (sigs.k8s.io/yaml.YAMLToJSON) before decoding them: most
// of a descriptor's decoding time. plainJSON makes the same JSON for the
// documents where that is certain without the YAML decoder.

// plainJSON returns what sigs.k8s.io/yaml.YAMLToJSON returns for data,
// byte for byte, when data is "plain" JSON, with ok; otherwise ok is false
// and the caller asks YAMLToJSON. Plain JSON is JSON that the YAML decoder
// reads to the same values as encoding/json:
//
//   - printable ASCII, with spaces and newlines between tokens (no tabs,
//     carriage returns or other bytes, which YAML treats otherwise);
//   - escapes in strings that YAML's double-quoted scalars have too (\" \\
//     \b \f \n \r \t \uXXXX; not \/), no \u of a surrogate (YAML refuses
//     it, JSON pairs it);
//   - numbers that are integers of at most 15 digits (both decoders read
//     them exactly; YAMLToJSON writes other numbers in its own way), not -0;
//   - no key "<<" (YAML's merge key);
//   - keys YAML takes as simple keys: on one line with their colon and at
//     most maxSimpleKey bytes from their quote to it (YAML refuses a
//     longer or broken one: "did not find expected ',' or '}'").
//
// YAMLToJSON writes the values it read with encoding/json (keys sorted,
// compact, HTML characters escaped); so does plainJSON. Duplicate keys:
// both decoders keep the last. TestPlainJSONIsYAMLToJSON and
// FuzzDecodeDescriptor compare the two.
func plainJSON(data []byte) ([]byte, bool) {
	if !plainJSONText(data) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if !onlySpace(data[dec.InputOffset():]) {
		return nil, false // more than one value, or not JSON after the first
	}
	if !plainValue(v) {
		return nil, false
	}
	js, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	return js, true
}

// plainJSONText checks the bytes of data: the characters, the escapes in
// strings, and the numbers outside them.
func plainJSONText(data []byte) bool {
	inString := false
	start := 0 // of the string being read
	for i := 0; i < len(data); i++ {
		c := data[i]
		if c == '\n' && !inString {
			continue
		}
		if c < 0x20 || c > 0x7e {
			return false
		}
		switch {
		case inString && c == '"':
			inString = false
			if !simpleKey(data, start, i+1) {
				return false
			}
		case inString && c == '\\':
			if i+1 >= len(data) {
				return false
			}
			i++
			switch data[i] {
			case '"', '\\', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(data) {
					return false
				}
				if h := data[i+1]; h == 'd' || h == 'D' {
					if l := data[i+2]; l >= '8' && l <= '9' || l >= 'a' && l <= 'f' || l >= 'A' && l <= 'F' {
						return false // a surrogate
					}
				}
				i += 4
			default:
				return false
			}
		case inString:
		case c == '"':
			inString, start = true, i
		case c == '-' || c >= '0' && c <= '9':
			j := i
			if c == '-' {
				j++
			}
			start := j
			for j < len(data) && data[j] >= '0' && data[j] <= '9' {
				j++
			}
			digits := j - start
			if digits == 0 || digits > 15 || (digits > 1 && data[start] == '0') || (c == '-' && digits == 1 && data[start] == '0') {
				return false
			}
			if j < len(data) && (data[j] == '.' || data[j] == 'e' || data[j] == 'E') {
				return false
			}
			i = j - 1
		}
	}
	return !inString
}

// maxSimpleKey is how far a key's colon may be from its opening quote:
// YAML's limit is 1024 characters (plain JSON is ASCII: bytes), kept clear.
const maxSimpleKey = 1000

// simpleKey reports whether the string data[start:end] is not a key, or a
// key YAML reads as one: the next byte after spaces is not a colon, or it
// is on the same line and within maxSimpleKey bytes of start.
func simpleKey(data []byte, start, end int) bool {
	newline := false
	for j := end; j < len(data); j++ {
		switch data[j] {
		case ' ':
		case '\n':
			newline = true
		case ':':
			return !newline && j-start <= maxSimpleKey
		default:
			return true
		}
	}
	return true
}

// plainValue reports whether v, decoded with UseNumber, has no merge key.
func plainValue(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if k == "<<" || !plainValue(e) {
				return false
			}
		}
	case []any:
		for _, e := range v {
			if !plainValue(e) {
				return false
			}
		}
	}
	return true
}

func onlySpace(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\n' {
			return false
		}
	}
	return true
}
