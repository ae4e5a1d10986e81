package manifests

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/yamlfile"
)

// fastDecode decodes one YAML document of the block-style subset that
// Helm's templates, toYaml and CRD files produce, giving what decodeDoc's
// reference path gives (yaml.v2's Unmarshal, then jsonValue), or reports
// false for anything outside the subset, which then takes that path (so
// errors, too, are always yaml.v2's).
//
// The subset: documents of nothing but blank and comment lines (null);
// block mappings and sequences (compact "- key: value" items and sequences
// at their key's indentation included); keys that are plain scalars
// resolving to strings, or single-line quoted scalars; values that are
// plain or quoted scalars, literal block scalars ("|", "|-", "|+" with
// detected indentation), and flow sequences and mappings on one line of
// quoted and simple plain scalars, "[]" and "{}" (see parseFlowSequence,
// parseFlowMapping); blank and comment lines between them. Anything else
// is left to yaml.v2: tabs, carriage returns and characters YAML does not
// allow or reads as line breaks, other flow collections, anchors, aliases,
// tags, folded scalars, comments after content, duplicate keys, the merge
// key, explicit "? " keys, a root scalar.
//
// yaml.v2's scanner reads a character at a time through several buffers
// and builds a token, an event and a node for every scalar before the
// value; reading Helm's output (most of it CustomResourceDefinitions of
// long literal descriptions) line by line is several times faster.
// TestFastDecodeSameAsYAMLv2 and FuzzFastDecode compare the two.
func fastDecode(data []byte) (any, bool) {
	if !fastDecodable(data) {
		return nil, false
	}
	// One fastLine (40 bytes) a line, allocated once: a document of blank
	// or comment lines (up to MaxDocumentNodes of them) costs that much.
	p := fastParser{openLast: len(data) > 0 && data[len(data)-1] != '\n',
		lines: make([]fastLine, 0, bytes.Count(data, []byte{'\n'})+1)}
	text := string(data)
	for len(text) > 0 {
		line := text
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = ""
		}
		if len(line) >= 3 && (line[:3] == "---" || line[:3] == "...") && (len(line) == 3 || line[3] == ' ') {
			// A document marker: yaml.v2 ends the document there, or
			// refuses it inside a scalar ("found unexpected document
			// indicator"); Decode hands documents over without them.
			return nil, false
		}
		content := strings.TrimLeft(line, " ")
		p.lines = append(p.lines, fastLine{raw: line, indent: len(line) - len(content), content: strings.TrimRight(content, " ")})
	}
	l := p.peek()
	if l == nil {
		// Nothing but blank and comment lines (a template that rendered
		// only comments): yaml.v2 reads no value.
		return nil, true
	}
	if l.indent != 0 {
		return nil, false
	}
	v, ok := p.block(0, 0)
	if !ok || p.peek() != nil {
		return nil, false
	}
	return v, true
}

// fastDecodable reports whether data holds only characters the subset
// takes: LF, printable ASCII, and valid UTF-8 of characters YAML allows
// that are not line breaks (NEL, LS, PS) or a BOM.
func fastDecodable(data []byte) bool {
	for i := 0; i < len(data); {
		// Eight printable ASCII characters or LFs at a time: most YAML.
		for i+8 <= len(data) && plainASCIIWord(binary.LittleEndian.Uint64(data[i:])) {
			i += 8
		}
		if i == len(data) {
			break
		}
		c := data[i]
		if c < 0x80 {
			if c < 0x20 && c != '\n' || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError || r == 0x85 || r == 0x2028 || r == 0x2029 || r == 0xfeff ||
			!(r >= 0xa0 && r <= 0xd7ff || r >= 0xe000 && r <= 0xfffd || r >= 0x10000 && r <= 0x10ffff) {
			return false
		}
		i += n
	}
	return true
}

// plainASCIIWord reports whether each of the eight bytes of x is LF or
// printable ASCII (0x20 to 0x7e). The masks are exact per byte: a byte's
// low seven bits plus at most 0x7f cannot carry into the next byte.
func plainASCIIWord(x uint64) bool {
	const ones, lows, highs = 0x0101010101010101, 0x7f7f7f7f7f7f7f7f, 0x8080808080808080
	low := x & lows
	below := ^((low + (0x80-0x20)*ones) | x) & highs // < 0x20
	above := ((low + ones) | x) & highs              // > 0x7e
	lf := x ^ '\n'*ones
	lf = ^(((lf & lows) + lows) | lf) & highs // == LF
	return (below&^lf)|above == 0
}

// fastMaxDepth bounds the nesting fastDecode follows: a block collection
// at this depth (the root is at 0) with a flow value inside ([{}]) would
// be MaxEncodeDepth levels deep, and deeper documents are left to
// decodeDoc's reference path, which refuses what nests past it.
const fastMaxDepth = MaxEncodeDepth - 3

type fastLine struct {
	raw     string // the line without its newline
	indent  int    // leading spaces
	content string // the line without leading and trailing spaces
}

type fastParser struct {
	lines []fastLine
	pos   int
	// openLast: the last line has no line break (a literal scalar
	// ending there is left to yaml.v2).
	openLast bool
}

// peek returns the next line that is neither blank nor a comment, or nil.
func (p *fastParser) peek() *fastLine {
	for p.pos < len(p.lines) {
		l := &p.lines[p.pos]
		if l.content != "" && l.content[0] != '#' {
			return l
		}
		p.pos++
	}
	return nil
}

func isSeqEntry(content string) bool {
	return content == "-" || strings.HasPrefix(content, "- ")
}

// block reads the collection whose first line, at indent, is next.
func (p *fastParser) block(indent, depth int) (any, bool) {
	if depth > fastMaxDepth {
		return nil, false
	}
	if isSeqEntry(p.peek().content) {
		return p.sequence(indent, depth)
	}
	return p.mapping(indent, depth)
}

func (p *fastParser) sequence(indent, depth int) (any, bool) {
	out := []any{}
	l := p.peek()
	for ; l != nil && l.indent == indent && isSeqEntry(l.content); l = p.peek() {
		rest := strings.TrimLeft(l.content[1:], " ")
		var v any
		var ok bool
		switch {
		case rest == "":
			p.pos++
			v, ok = p.nested(indent, false, depth)
		case isSeqEntry(rest) || rest[0] == '#':
			return nil, false
		case rest[0] == '{' || rest[0] == '[':
			p.pos++
			v, ok = p.inline(rest, indent)
		case isKeyLine(rest):
			// A compact mapping: its column is where the key starts.
			l.indent += len(l.content) - len(rest)
			l.content = rest
			v, ok = p.mapping(l.indent, depth+1)
		default:
			p.pos++
			v, ok = p.inline(rest, indent)
		}
		if !ok {
			return nil, false
		}
		out = append(out, v)
	}
	if l != nil && l.indent > indent {
		return nil, false
	}
	return out, true
}

func (p *fastParser) mapping(indent, depth int) (any, bool) {
	m := map[string]any{}
	l := p.peek()
	for ; l != nil && l.indent == indent; l = p.peek() {
		if isSeqEntry(l.content) {
			return nil, false
		}
		key, rest, ok := parseKey(l.content)
		if !ok {
			return nil, false
		}
		if _, dup := m[key]; dup {
			return nil, false
		}
		p.pos++
		var v any
		if rest == "" {
			v, ok = p.nested(indent, true, depth)
		} else {
			v, ok = p.inline(rest, indent)
		}
		if !ok {
			return nil, false
		}
		m[key] = v
	}
	if l != nil && l.indent > indent {
		return nil, false
	}
	return m, true
}

// nested reads the value of a key or a sequence entry with nothing after
// the indicator, at indent: a more indented collection, a sequence at the
// key's own indentation, or null.
func (p *fastParser) nested(indent int, inMapping bool, depth int) (any, bool) {
	l := p.peek()
	switch {
	case l == nil:
		return nil, true
	case l.indent > indent && (l.content[0] == '{' || l.content[0] == '['):
		// A flow collection on a line of its own.
		p.pos++
		return p.inline(l.content, indent)
	case l.indent > indent:
		return p.block(l.indent, depth+1)
	case inMapping && l.indent == indent && isSeqEntry(l.content):
		return p.sequence(indent, depth+1)
	default:
		return nil, true
	}
}

// inline reads a value that starts on the line just consumed (rest, after
// the indicator) of a collection at indent.
func (p *fastParser) inline(rest string, indent int) (any, bool) {
	var v any
	switch c := rest[0]; {
	case rest == "[]":
		v = []any{}
	case rest == "{}":
		v = map[string]any{}
	case c == '"' || c == '\'':
		return p.quoted(rest, indent)
	case c == '|':
		return p.literal(rest, indent)
	case c == '[':
		l, ok := parseFlowSequence(rest)
		if !ok {
			return nil, false
		}
		v = l
	case c == '{':
		m, ok := parseFlowMapping(rest)
		if !ok {
			return nil, false
		}
		v = m
	case c == '-' && len(rest) > 1 && rest[1] != ' ', strings.IndexByte("-?:,[]{}#&*!|>'\"%@`", c) < 0:
		// ("-1", "--flag": a plain scalar.)
		return p.plain(rest, indent)
	default:
		return nil, false
	}
	// The value must end on its line: a more indented line would continue
	// a plain or quoted scalar, or be an error.
	if l := p.peek(); l != nil && l.indent > indent {
		return nil, false
	}
	return v, true
}

// plain reads a plain scalar that starts with first (a line's rest) in a
// collection at indent, and the more indented lines that continue it,
// folded as yaml.v2 folds them: a line break between two lines is a space,
// and each empty line between them a newline.
func (p *fastParser) plain(first string, indent int) (any, bool) {
	if !plainLine(first) {
		return nil, false
	}
	var b []byte // the folded text, when it continues
	empty := 0
	for i := p.pos; i < len(p.lines); i++ {
		l := &p.lines[i]
		if l.content == "" {
			empty++
			continue
		}
		if l.indent <= indent {
			break
		}
		// A comment line ends the scalar (and what follows would be an
		// error).
		if l.content[0] == '#' || !plainLine(l.content) {
			return nil, false
		}
		if b == nil {
			b = append(b, first...)
		}
		if empty == 0 {
			b = append(b, ' ')
		}
		for ; empty > 0; empty-- {
			b = append(b, '\n')
		}
		b = append(b, l.content...)
		p.pos = i + 1
	}
	if b == nil {
		return jsonValue(yamlfile.Plain(first)) // plainValue: first is a plainLine
	}
	if s := string(b); yamlfile.PlainString(s) {
		return s, true
	}
	return nil, false
}

// plainLine reports whether a line of a plain scalar (trimmed) holds
// neither a value indicator nor a comment: no ": ", no ":" at its end and
// no " #". It looks for the rare ':' and '#' rather than for the pairs:
// strings.Contains(s, " #") stops at every space of a CRD's descriptions.
func plainLine(s string) bool {
	for i := 0; ; i++ {
		j := strings.IndexByte(s[i:], ':')
		if j < 0 {
			break
		}
		if i += j; i+1 == len(s) || s[i+1] == ' ' {
			return false
		}
	}
	for i := 0; ; i++ {
		j := strings.IndexByte(s[i:], '#')
		if j < 0 {
			return true
		}
		if i += j; i > 0 && s[i-1] == ' ' {
			return false
		}
	}
}

// parseFlowSequence reads a flow sequence on one line of flow scalars (see
// flowScalar): ["a", 'b/c'], [1, 2], [].
func parseFlowSequence(s string) ([]any, bool) {
	out := []any{}
	s = strings.TrimLeft(s[1:], " ")
	if strings.HasPrefix(s, "]") {
		return out, s == "]"
	}
	for {
		v, after, ok := flowScalar(s)
		if !ok {
			return nil, false
		}
		out = append(out, v)
		switch {
		case after == "]":
			return out, true
		case strings.HasPrefix(after, ","):
			s = strings.TrimLeft(after[1:], " ")
		default:
			return nil, false
		}
	}
}

// parseFlowMapping reads a flow mapping on one line whose keys are flow
// scalars that are strings and whose values are flow scalars, [] or {}:
// {path: /healthz, port: http}, {name: tmp, emptyDir: {}}, {}.
func parseFlowMapping(s string) (map[string]any, bool) {
	m := map[string]any{}
	s = strings.TrimLeft(s[1:], " ")
	if strings.HasPrefix(s, "}") {
		return m, s == "}"
	}
	for {
		k, after, ok := flowScalar(s)
		key, isString := k.(string)
		if !ok || !isString || !strings.HasPrefix(after, ": ") || key == "<<" || len(s)-len(after) > maxSimpleKeyText {
			return nil, false
		}
		if _, dup := m[key]; dup {
			return nil, false
		}
		s = strings.TrimLeft(after[2:], " ")
		var v any
		switch {
		case strings.HasPrefix(s, "{}"):
			v, after = map[string]any{}, strings.TrimLeft(s[2:], " ")
		case strings.HasPrefix(s, "[]"):
			v, after = []any{}, strings.TrimLeft(s[2:], " ")
		default:
			if v, after, ok = flowScalar(s); !ok {
				return nil, false
			}
		}
		m[key] = v
		switch {
		case after == "}":
			return m, true
		case strings.HasPrefix(after, ","):
			s = strings.TrimLeft(after[1:], " ")
		default:
			return nil, false
		}
	}
}

// flowScalar reads a scalar at the start of s inside a flow collection: a
// double- or single-quoted one on one line (["a", 'b']: a quoted scalar
// reads the same in flow and block context), or a plain one of letters,
// digits, '.', '/', '_' and '-' (not first), which does too. It returns the
// value and what follows (without leading spaces).
func flowScalar(s string) (any, string, bool) {
	if s == "" {
		return nil, "", false
	}
	if s[0] == '"' || s[0] == '\'' {
		return parseQuoted(s)
	}
	i := 0
	for i < len(s) && (s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z' || s[i] >= '0' && s[i] <= '9' || s[i] == '.' || s[i] == '/' || s[i] == '_' || s[i] == '-' && i > 0) {
		i++
	}
	if i == 0 {
		return nil, "", false
	}
	v, ok := plainValue(s[:i])
	return v, strings.TrimLeft(s[i:], " "), ok
}

// plainValue resolves a single-line plain scalar as yaml.v2 does.
func plainValue(s string) (any, bool) {
	if !plainLine(s) {
		return nil, false
	}
	return jsonValue(yamlfile.Plain(s))
}

// isKeyLine reports whether content starts a mapping entry ("key:" or
// "key: value", the key plain or quoted).
func isKeyLine(content string) bool {
	if c := content[0]; c == '"' || c == '\'' {
		_, after, ok := parseQuoted(content)
		return ok && (after == ":" || strings.HasPrefix(after, ": "))
	}
	return strings.Contains(content, ": ") || strings.HasSuffix(content, ":")
}

// maxSimpleKeyText bounds the text of a mapping key, up to its ':', that
// fastDecode takes: yaml.v2 refuses an implicit key whose ':' is more than
// 1024 characters after its start (yaml_parser_stale_simple_keys).
const maxSimpleKeyText = 1000

// parseKey splits "key: rest" (content of a line, trimmed); rest is ""
// when the value is on the following lines.
func parseKey(content string) (key, rest string, ok bool) {
	var after string
	if c := content[0]; c == '"' || c == '\'' {
		key, after, ok = parseQuoted(content)
		if !ok || !(after == ":" || strings.HasPrefix(after, ": ")) {
			return "", "", false
		}
	} else {
		i := strings.Index(content, ": ")
		if i < 0 {
			if !strings.HasSuffix(content, ":") {
				return "", "", false
			}
			i = len(content) - 1
		}
		key, after = content[:i], content[i:]
		if key == "" || strings.IndexByte("-?:,[]{}#&*!|>'\"%@`", key[0]) >= 0 || key[len(key)-1] == ' ' ||
			strings.Contains(key, " #") || key == "<<" || !yamlfile.PlainString(key) {
			return "", "", false
		}
	}
	// yaml.v2 refuses simple keys longer than 1024 characters, counted in
	// the text up to the ':' (quotes, escapes and spaces included: a
	// quoted key's value may be much shorter); bytes are at least as many.
	if len(content)-len(after) > maxSimpleKeyText {
		return "", "", false
	}
	return key, strings.TrimLeft(after[1:], " "), true
}

// parseQuoted reads a single- or double-quoted scalar that ends on its line
// and returns its value and what follows the closing quote (trimmed).
func parseQuoted(s string) (value, after string, ok bool) {
	if s[0] == '\'' {
		var b []byte
		for i := 1; i < len(s); i++ {
			if s[i] != '\'' {
				continue
			}
			if i+1 < len(s) && s[i+1] == '\'' { // '' is a quote
				b = append(b, s[1:i+1]...)
				s = s[i+1:]
				i = 0
				continue
			}
			if b == nil {
				return s[1:i], strings.TrimLeft(s[i+1:], " "), true
			}
			return string(append(b, s[1:i]...)), strings.TrimLeft(s[i+1:], " "), true
		}
		return "", "", false
	}
	i := 1
	for i < len(s) && s[i] != '"' && s[i] != '\\' {
		i++
	}
	if i < len(s) && s[i] == '"' {
		return s[1:i], strings.TrimLeft(s[i+1:], " "), true
	}
	b := []byte(s[1:i])
	for i < len(s) {
		switch c := s[i]; c {
		case '"':
			return string(b), strings.TrimLeft(s[i+1:], " "), true
		case '\\':
			if i+1 >= len(s) {
				return "", "", false // a line continuation
			}
			i++
			switch e := s[i]; e {
			case '"', '\\':
				b = append(b, e)
			case 'n':
				b = append(b, '\n')
			case 't':
				b = append(b, '\t')
			case 'r':
				b = append(b, '\r')
			case 'x', 'u', 'U':
				n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
				if i+n >= len(s) {
					return "", "", false
				}
				r, err := strconv.ParseUint(s[i+1:i+1+n], 16, 32)
				if err != nil || r >= 0xd800 && r <= 0xdfff || r > 0x10ffff {
					return "", "", false
				}
				b = utf8.AppendRune(b, rune(r))
				i += n
			default:
				return "", "", false
			}
			i++
		default:
			b = append(b, c)
			i++
		}
	}
	return "", "", false
}

// literal reads a literal block scalar whose header ("|", "|-" or "|+") is
// rest, in a collection at indent; its content lines follow.
func (p *fastParser) literal(rest string, indent int) (any, bool) {
	var chomp byte
	switch rest {
	case "|":
	case "|-", "|+":
		chomp = rest[1]
	default:
		return nil, false
	}
	// The content's indentation is that of its first line, which must be
	// deeper than the collection's; leading blank lines are left to
	// yaml.v2.
	if p.pos >= len(p.lines) {
		return nil, false
	}
	first := p.lines[p.pos]
	if first.content == "" || first.indent <= indent {
		return nil, false
	}
	ind := first.indent
	var b strings.Builder
	breaks := 0 // line breaks not yet written
	lines := 0
	for ; p.pos < len(p.lines); p.pos++ {
		l := p.lines[p.pos]
		if len(l.raw) <= ind && l.content == "" {
			breaks++ // an empty line
			continue
		}
		if l.indent < ind && l.content != "" {
			break
		}
		if lines > 0 {
			breaks++
		}
		for ; breaks > 0; breaks-- {
			b.WriteByte('\n')
		}
		b.WriteString(l.raw[ind:])
		lines++
	}
	if p.pos == len(p.lines) && p.openLast {
		return nil, false
	}
	// The line break after the last content line and the empty lines
	// after it: breaks counts the latter.
	switch chomp {
	case 0:
		b.WriteByte('\n')
	case '+':
		b.WriteByte('\n')
		for ; breaks > 0; breaks-- {
			b.WriteByte('\n')
		}
	}
	return b.String(), true
}

// quoted reads a single- or double-quoted scalar that starts with rest (a
// suffix of the content of the line before p.pos) in a collection at
// indent, over as many lines as it takes, as yaml.v2's scanner does
// (yaml_parser_scan_flow_scalar): line breaks fold as in plain scalars,
// spaces around them go, "\\" before a break joins the lines. Its lines
// after the first must be blank or more indented than the collection, and
// nothing but spaces may follow the closing quote.
func (p *fastParser) quoted(rest string, indent int) (any, bool) {
	single := rest[0] == '\''
	li := p.pos - 1
	// rest ends where the line's content ends; the scalar goes on to the
	// end of the line, trailing spaces included.
	l := &p.lines[li]
	line := l.raw[l.indent+len(l.content)-len(rest)+1:]
	var s, whitespaces []byte
	for {
		// Non-blank characters.
		leadingBlanks := false
		for len(line) > 0 && line[0] != ' ' {
			c := line[0]
			switch {
			case single && c == '\'' && len(line) > 1 && line[1] == '\'':
				s = append(s, '\'')
				line = line[2:]
				continue
			case single && c == '\'', !single && c == '"':
			case !single && c == '\\' && len(line) == 1:
				// An escaped line break.
				li++
				if li >= len(p.lines) {
					return nil, false
				}
				line = p.lines[li].raw
				leadingBlanks = true
			case !single && c == '\\':
				var ok bool
				if s, line, ok = appendEscape(s, line); !ok {
					return nil, false
				}
				continue
			default:
				s = append(s, c)
				line = line[1:]
				continue
			}
			break
		}
		if len(line) > 0 && (single && line[0] == '\'' || !single && line[0] == '"') {
			break
		}
		// Blanks and line breaks.
		var leadingBreak, trailingBreaks int
		for {
			if len(line) > 0 && line[0] == ' ' {
				if !leadingBlanks {
					whitespaces = append(whitespaces, ' ')
				}
				line = line[1:]
				continue
			}
			if len(line) > 0 {
				break
			}
			li++
			if li >= len(p.lines) {
				return nil, false // the end of the document
			}
			if l := p.lines[li]; l.content != "" && l.indent <= indent {
				return nil, false
			}
			line = p.lines[li].raw
			if !leadingBlanks {
				whitespaces = whitespaces[:0]
				leadingBreak = 1
				leadingBlanks = true
			} else {
				trailingBreaks++
			}
		}
		if leadingBlanks {
			if leadingBreak > 0 && trailingBreaks == 0 {
				s = append(s, ' ')
			}
			for ; trailingBreaks > 0; trailingBreaks-- {
				s = append(s, '\n')
			}
		} else {
			s = append(s, whitespaces...)
			whitespaces = whitespaces[:0]
		}
	}
	if strings.TrimLeft(line[1:], " ") != "" {
		return nil, false
	}
	p.pos = li + 1
	if l := p.peek(); l != nil && l.indent > indent {
		return nil, false
	}
	return string(s), true
}

// appendEscape appends the character of the escape sequence at the start
// of line (a backslash and more) to s, as yaml.v2's scanner reads it.
func appendEscape(s []byte, line string) ([]byte, string, bool) {
	if len(line) < 2 {
		return nil, "", false
	}
	n := 0
	switch e := line[1]; e {
	case '0':
		s = append(s, 0)
	case 'a':
		s = append(s, '\a')
	case 'b':
		s = append(s, '\b')
	case 't':
		s = append(s, '\t')
	case 'n':
		s = append(s, '\n')
	case 'v':
		s = append(s, '\v')
	case 'f':
		s = append(s, '\f')
	case 'r':
		s = append(s, '\r')
	case 'e':
		s = append(s, 0x1b)
	case ' ', '"', '\'', '\\':
		s = append(s, e)
	case 'N':
		s = append(s, "\u0085"...)
	case '_':
		s = append(s, "\u00a0"...)
	case 'L':
		s = append(s, "\u2028"...)
	case 'P':
		s = append(s, "\u2029"...)
	case 'x':
		n = 2
	case 'u':
		n = 4
	case 'U':
		n = 8
	default:
		return nil, "", false
	}
	if n == 0 {
		return s, line[2:], true
	}
	if len(line) < 2+n {
		return nil, "", false
	}
	r := 0
	for _, h := range []byte(line[2 : 2+n]) {
		switch {
		case h >= '0' && h <= '9':
			r = r<<4 + int(h-'0')
		case h >= 'a' && h <= 'f':
			r = r<<4 + int(h-'a'+10)
		case h >= 'A' && h <= 'F':
			r = r<<4 + int(h-'A'+10)
		default:
			return nil, "", false
		}
	}
	if r >= 0xd800 && r <= 0xdfff || r > 0x10ffff {
		return nil, "", false
	}
	return utf8.AppendRune(s, rune(r)), line[2+n:], true
}
