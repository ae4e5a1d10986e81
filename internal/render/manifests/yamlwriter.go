package manifests

import (
	"encoding/binary"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/yamlfile"
)

// writeYAML writes o as go.yaml.in/yaml/v2's Marshal writes it (indent 2,
// line width 80, unicode, LF breaks, sorted keys), byte for byte, for the
// values Decode produces: nil, bool, int, int64, finite non-integral
// float64, valid UTF-8 strings, non-nil []any and map[string]any. It
// reports false for anything else, and for what it leaves to yaml.v2: a
// mapping key the emitter would not write as a simple key (longer than 128
// bytes or holding a line break).
//
// yaml.v2 builds an event per node, reflects on every value, sorts map keys
// through reflect.Value and []rune copies and checks each scalar in several
// passes; for the megabytes of CustomResourceDefinitions of an operator
// chart that was most of the cost of printing YAML. This is the part of its
// emitter (emitterc.go) that such values reach, kept to the same state
// (column, indent, whitespace, indention) and the same decisions (scalar
// analysis, style selection, folding at the line width), so that the text
// is the same; TestWriteYAMLSameAsYAMLv2 and FuzzWriteYAML compare the two.
func writeYAML(o Object) ([]byte, bool) {
	// The text is written into a kept buffer (see jsonScratch) and copied
	// out at its size.
	scratch := yamlScratch.Get().(*[]byte)
	defer yamlScratch.Put(scratch)
	w := yamlWriter{indent: -1, whitespace: true, indention: true, buf: (*scratch)[:0]}
	ok := w.node(o, false, 0)
	if ok {
		// Document end: yaml_emitter_emit_document_end's write_indent.
		w.writeIndent()
	}
	if cap(w.buf) <= maxJSONScratch {
		*scratch = w.buf
	}
	if !ok {
		return nil, false
	}
	return append([]byte(nil), w.buf...), true
}

var yamlScratch = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// The emitter's settings as yaml.v2's Marshal leaves them.
const (
	yamlBestIndent = 2
	yamlBestWidth  = 80
	// yamlMaxSimpleKey is the longest scalar the emitter writes as a
	// simple key (yaml_emitter_check_simple_key).
	yamlMaxSimpleKey = 128
	yamlMaxDepth     = MaxEncodeDepth // deeper: refused by marshalYAML (a collection counts at its own depth + 1)
)

// yamlSpaces are written at once by writeIndent.
const yamlSpaces = "                                                                "

type scalarStyle uint8

const (
	stylePlain scalarStyle = iota
	styleSingleQuoted
	styleDoubleQuoted
	styleLiteral
)

// yamlWriter is the state of yaml_emitter_t that block collections and
// scalars use. Flow collections only occur empty ("[]", "{}"), so the flow
// level is always 0 where a scalar is written.
type yamlWriter struct {
	buf        []byte
	column     int // in characters
	indent     int
	whitespace bool
	indention  bool
}

func (w *yamlWriter) put(c byte) {
	w.buf = append(w.buf, c)
	w.column++
}

func (w *yamlWriter) putBreak() {
	w.buf = append(w.buf, '\n')
	w.column = 0
}

// write copies the character at value[i] and returns the index after it.
func (w *yamlWriter) write(value string, i int) int {
	n := charWidth(value[i])
	w.buf = append(w.buf, value[i:i+n]...)
	w.column++
	return i + n
}

// writeBreak copies the line break at value[i] (write_break).
func (w *yamlWriter) writeBreak(value string, i int) int {
	if value[i] == '\n' {
		w.putBreak()
		return i + 1
	}
	i = w.write(value, i)
	w.column = 0
	return i
}

func (w *yamlWriter) writeIndent() {
	indent := max(w.indent, 0)
	if !w.indention || w.column > indent || (w.column == indent && !w.whitespace) {
		w.putBreak()
	}
	if n := indent - w.column; n > 0 {
		for ; n > len(yamlSpaces); n -= len(yamlSpaces) {
			w.buf = append(w.buf, yamlSpaces...)
		}
		w.buf = append(w.buf, yamlSpaces[:n]...)
		w.column = indent
	}
	w.whitespace = true
	w.indention = true
}

// writeIndicator writes an ASCII indicator.
func (w *yamlWriter) writeIndicator(indicator string, needWhitespace, isWhitespace, isIndention bool) {
	if needWhitespace && !w.whitespace {
		w.put(' ')
	}
	w.buf = append(w.buf, indicator...)
	w.column += len(indicator)
	w.whitespace = isWhitespace
	w.indention = w.indention && isIndention
}

// increaseIndent is yaml_emitter_increase_indent; it returns the indent to
// restore.
func (w *yamlWriter) increaseIndent(flow, indentless bool) int {
	old := w.indent
	if w.indent < 0 {
		if flow {
			w.indent = yamlBestIndent
		} else {
			w.indent = 0
		}
	} else if !indentless {
		w.indent += yamlBestIndent
	}
	return old
}

// node writes v; mapping is the emitter's mapping_context (v is a mapping
// value).
func (w *yamlWriter) node(v any, mapping bool, depth int) bool {
	if depth > yamlMaxDepth {
		return false
	}
	switch v := v.(type) {
	case nil:
		w.scalar("null", stylePlain, false)
	case bool:
		w.scalar(strconv.FormatBool(v), stylePlain, false)
	case int:
		w.scalar(strconv.Itoa(v), stylePlain, false)
	case int64:
		w.scalar(strconv.FormatInt(v, 10), stylePlain, false)
	case float64:
		// An integral float64 reads back (through the JSON detour) as an
		// int, which yaml.v2 formats without a fraction: see directYAML.
		if math.IsNaN(v) || math.IsInf(v, 0) || v == math.Trunc(v) {
			return false
		}
		w.scalar(strconv.FormatFloat(v, 'g', -1, 64), stylePlain, false)
	case string:
		if !utf8.ValidString(v) {
			return false
		}
		w.scalar(v, stringStyle(v), false)
	case []any:
		if v == nil || depth >= yamlMaxDepth {
			return false
		}
		if len(v) == 0 {
			w.writeIndicator("[", true, true, false)
			w.writeIndicator("]", false, false, false)
			return true
		}
		old := w.increaseIndent(false, mapping && !w.indention)
		for _, e := range v {
			w.writeIndent()
			w.writeIndicator("-", true, false, true)
			if !w.node(e, false, depth+1) {
				return false
			}
		}
		w.indent = old
	case map[string]any:
		if v == nil || depth >= yamlMaxDepth {
			return false
		}
		if len(v) == 0 {
			w.writeIndicator("{", true, true, false)
			w.writeIndicator("}", false, false, false)
			return true
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			if len(k) > yamlMaxSimpleKey || !utf8.ValidString(k) || hasBreak(k) {
				return false
			}
			keys = append(keys, k)
		}
		// Sorted by bytes first, so that where yaml.v2's order is not a
		// total order (see mappingKeys) the text does not depend on the
		// map's iteration order: it is then yaml.v2's text for one such order.
		slices.Sort(keys)
		sort.Sort(mappingKeys(keys))
		old := w.increaseIndent(false, false)
		for _, k := range keys {
			w.writeIndent()
			w.scalar(k, stringStyle(k), true)
			w.writeIndicator(":", false, false, false)
			if !w.node(v[k], true, depth+1) {
				return false
			}
		}
		w.indent = old
	default:
		return false
	}
	return true
}

// stringStyle is the style yaml.v2's encoder asks for a string (stringv).
func stringStyle(s string) scalarStyle {
	switch {
	case strings.IndexByte(s, '\n') >= 0:
		return styleLiteral
	case yamlfile.PlainString(s) && !isBase60Float(s):
		return stylePlain
	default:
		return styleDoubleQuoted
	}
}

// scalar is yaml_emitter_emit_scalar of an implicit, untagged scalar.
func (w *yamlWriter) scalar(value string, style scalarStyle, simpleKey bool) {
	a, ascii := analyzeScalarASCII(value)
	// Printable ASCII on one line: one byte a column, no breaks to copy.
	oneLineASCII := ascii && !a.multiline
	// yaml_emitter_select_scalar_style (flow level 0).
	if simpleKey && a.multiline {
		style = styleDoubleQuoted
	}
	if style == stylePlain {
		if !a.blockPlainAllowed || len(value) == 0 && simpleKey {
			style = styleSingleQuoted
		}
	}
	if style == styleSingleQuoted && !a.singleQuotedAllowed {
		style = styleDoubleQuoted
	}
	if style == styleLiteral && (!a.blockAllowed || simpleKey) {
		style = styleDoubleQuoted
	}
	old := w.increaseIndent(true, false)
	switch style {
	case stylePlain:
		if oneLineASCII {
			w.writePlainASCII(value, !simpleKey)
		} else {
			w.writePlain(value, !simpleKey)
		}
	case styleSingleQuoted:
		if oneLineASCII {
			w.writeSingleQuotedASCII(value, !simpleKey)
		} else {
			w.writeSingleQuoted(value, !simpleKey)
		}
	case styleDoubleQuoted:
		w.writeDoubleQuoted(value, !simpleKey)
	case styleLiteral:
		if ascii {
			w.writeLiteralASCII(value)
		} else {
			w.writeLiteral(value)
		}
	}
	w.indent = old
}

// scalarAnalysis is what yaml_emitter_analyze_scalar finds out about a
// scalar (flow_plain_allowed is not needed at flow level 0).
type scalarAnalysis struct {
	multiline           bool
	blockPlainAllowed   bool
	singleQuotedAllowed bool
	blockAllowed        bool
}

func analyzeScalar(value string) scalarAnalysis {
	a, _ := analyzeScalarASCII(value)
	return a
}

// Byte classes of analyzeScalarASCII's table: what a byte of a scalar may
// change in the analysis.
const (
	scalarOrdinary uint8 = iota // printable ASCII but the three below
	scalarBreak                 // LF
	scalarColon
	scalarHash
	scalarOther // controls (CR and tab among them), DEL, anything non-ASCII
)

// scalarClass classifies each byte for analyzeScalarASCII. A space is
// ordinary: it only matters next to a break, a '#' or a ':', which look at
// their neighbours, and at either end.
var scalarClass = func() (t [256]uint8) {
	for c := range t {
		switch {
		case c == '\n':
			t[c] = scalarBreak
		case c == ':':
			t[c] = scalarColon
		case c == '#':
			t[c] = scalarHash
		case c < 0x20 || c >= 0x7f:
			t[c] = scalarOther
		}
	}
	return t
}()

// analyzeScalarASCII is analyzeScalarSlow for the scalars of most charts
// (all of most): printable ASCII and LF. Over such text, the emitter's
// per-character state comes down to a few byte pairs (" \n", "\n ", " #",
// "\n#", ": ") and the first and last bytes, so the loop only stops at
// LFs, colons and '#', and skips eight bytes at a time where there are
// none. ascii reports whether value was such text; for any other it gives
// analyzeScalarSlow's answer.
func analyzeScalarASCII(value string) (a scalarAnalysis, ascii bool) {
	if len(value) == 0 {
		return scalarAnalysis{blockPlainAllowed: true, singleQuotedAllowed: true}, true
	}
	var blockIndicators, lineBreaks, breakSpace, spaceBreak bool
	switch value[0] {
	case '#', ',', '[', ']', '{', '}', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
		blockIndicators = true
	case '?', '-':
		blockIndicators = len(value) == 1 || value[1] == ' ' || value[1] == '\t'
	}
	if strings.HasPrefix(value, "---") || strings.HasPrefix(value, "...") {
		blockIndicators = true
	}
	last := len(value) - 1
	for i := 0; i < len(value); i++ {
		for i+8 <= len(value) && !specialWord(binary.LittleEndian.Uint64([]byte(value[i:i+8]))) {
			i += 8
		}
		if i == len(value) {
			break
		}
		switch scalarClass[value[i]] {
		case scalarOrdinary:
		case scalarBreak:
			lineBreaks = true
			if i > 0 && value[i-1] == ' ' {
				spaceBreak = true
			}
			if i < last {
				switch value[i+1] {
				case ' ':
					breakSpace = true
				case '#':
					blockIndicators = true
				}
			}
		case scalarColon:
			// (A tab after it would have gone the other way.)
			if i == last || value[i+1] == ' ' {
				blockIndicators = true
			}
		case scalarHash:
			// After a break: seen there.
			if i > 0 && value[i-1] == ' ' {
				blockIndicators = true
			}
		default:
			return analyzeScalarSlow(value), false
		}
	}
	leadingSpace, leadingBreak := value[0] == ' ', value[0] == '\n'
	trailingSpace, trailingBreak := value[last] == ' ', value[last] == '\n'
	a = scalarAnalysis{multiline: lineBreaks, blockPlainAllowed: true, singleQuotedAllowed: true, blockAllowed: true}
	if leadingSpace || leadingBreak || trailingSpace || trailingBreak || lineBreaks || blockIndicators {
		a.blockPlainAllowed = false
	}
	if trailingSpace {
		a.blockAllowed = false
	}
	if breakSpace {
		a.blockPlainAllowed = false
		a.singleQuotedAllowed = false
	}
	if spaceBreak {
		a.blockPlainAllowed = false
		a.singleQuotedAllowed = false
		a.blockAllowed = false
	}
	return a, true
}

// analyzeScalarSlow is yaml_emitter_analyze_scalar, character by
// character, for any non-empty value.
func analyzeScalarSlow(value string) scalarAnalysis {
	var (
		blockIndicators, lineBreaks, specialCharacters                        bool
		leadingSpace, leadingBreak, trailingSpace, trailingBreak, breakSpace  bool
		spaceBreak, precededByWhitespace, followedByWhitespace, previousSpace bool
		previousBreak                                                         bool
	)
	if strings.HasPrefix(value, "---") || strings.HasPrefix(value, "...") {
		blockIndicators = true
	}
	precededByWhitespace = true
	for i, n := 0, 0; i < len(value); i += n {
		c := value[i]
		n = charWidth(c)
		followedByWhitespace = i+n >= len(value) || value[i+n] == ' ' || value[i+n] == '\t'
		if i == 0 {
			switch c {
			case '#', ',', '[', ']', '{', '}', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
				blockIndicators = true
			case '?', ':', '-':
				if followedByWhitespace {
					blockIndicators = true
				}
			}
		} else {
			switch c {
			case ':':
				if followedByWhitespace {
					blockIndicators = true
				}
			case '#':
				if precededByWhitespace {
					blockIndicators = true
				}
			}
		}
		if !isPrintable(value, i) {
			specialCharacters = true
		}
		if c == ' ' {
			if i == 0 {
				leadingSpace = true
			}
			if i+1 == len(value) {
				trailingSpace = true
			}
			if previousBreak {
				breakSpace = true
			}
			previousSpace, previousBreak = true, false
		} else if isBreak(value, i) {
			lineBreaks = true
			if i == 0 {
				leadingBreak = true
			}
			if i+n == len(value) {
				trailingBreak = true
			}
			if previousSpace {
				spaceBreak = true
			}
			previousSpace, previousBreak = false, true
		} else {
			previousSpace, previousBreak = false, false
		}
		precededByWhitespace = isBlankZ(value, i)
	}
	a := scalarAnalysis{multiline: lineBreaks, blockPlainAllowed: true, singleQuotedAllowed: true, blockAllowed: true}
	if leadingSpace || leadingBreak || trailingSpace || trailingBreak {
		a.blockPlainAllowed = false
	}
	if trailingSpace {
		a.blockAllowed = false
	}
	if breakSpace {
		a.blockPlainAllowed = false
		a.singleQuotedAllowed = false
	}
	if spaceBreak || specialCharacters {
		a.blockPlainAllowed = false
		a.singleQuotedAllowed = false
		a.blockAllowed = false
	}
	if lineBreaks || blockIndicators {
		a.blockPlainAllowed = false
	}
	return a
}

// specialWord reports whether one of the eight bytes of x is not
// scalarOrdinary: below 0x20 (LF among them), above 0x7e, ':' or '#'. The
// tests for a zero byte (x-0x01…)&^x&0x80… and for a byte above 0x7e
// ((x+0x01…)|x)&0x80… may mark bytes after a marked one, never mark one in
// a word without one.
func specialWord(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	below := (x - 0x20*ones) &^ x
	above := (x + 0x01*ones) | x
	colon := x ^ ':'*ones
	colon = (colon - ones) &^ colon
	hash := x ^ '#'*ones
	hash = (hash - ones) &^ hash
	return (below|above|colon|hash)&highs != 0
}

func (w *yamlWriter) writePlain(value string, allowBreaks bool) {
	if !w.whitespace {
		w.put(' ')
	}
	spaces, breaks := false, false
	for i := 0; i < len(value); {
		switch {
		case value[i] == ' ':
			if allowBreaks && !spaces && w.column > yamlBestWidth && i+1 < len(value) && value[i+1] != ' ' {
				w.writeIndent()
				i++
			} else {
				i = w.write(value, i)
			}
			spaces = true
		case isBreak(value, i):
			if !breaks && value[i] == '\n' {
				w.putBreak()
			}
			i = w.writeBreak(value, i)
			w.indention = true
			breaks = true
		default:
			if breaks {
				w.writeIndent()
			}
			// A run of characters that are neither spaces nor breaks.
			j := i + 1
			for j < len(value) && value[j] != ' ' && value[j] != '\n' && value[j] != '\r' && value[j] < 0x80 {
				j++
			}
			if j > i+1 {
				w.buf = append(w.buf, value[i:j]...)
				w.column += j - i
				i = j
			} else {
				i = w.write(value, i)
			}
			w.indention = false
			spaces, breaks = false, false
		}
	}
	w.whitespace = false
	w.indention = false
}

// writePlainASCII is writePlain for printable ASCII without a break: every
// byte is a column, and the only place to fold is a space.
func (w *yamlWriter) writePlainASCII(value string, allowBreaks bool) {
	if !w.whitespace {
		w.put(' ')
	}
	// writePlain folds at a space value[i] (i+1 < len(value)) where the
	// column, w.column+i here, is past the line width; where none can be,
	// the value is copied at once.
	if !allowBreaks || w.column+len(value)-2 <= yamlBestWidth {
		w.buf = append(w.buf, value...)
		w.column += len(value)
	} else {
		spaces := false
		for i := 0; i < len(value); {
			if value[i] == ' ' {
				if !spaces && w.column > yamlBestWidth && i+1 < len(value) && value[i+1] != ' ' {
					w.writeIndent()
				} else {
					w.put(' ')
				}
				i++
				spaces = true
				continue
			}
			j := strings.IndexByte(value[i:], ' ')
			if j < 0 {
				j = len(value) - i
			}
			w.buf = append(w.buf, value[i:i+j]...)
			w.column += j
			i += j
			w.indention = false
			spaces = false
		}
	}
	w.whitespace = false
	w.indention = false
}

// writeSingleQuotedASCII is writeSingleQuoted for printable ASCII without
// a break.
func (w *yamlWriter) writeSingleQuotedASCII(value string, allowBreaks bool) {
	w.writeIndicator("'", true, false, false)
	spaces := false
	for i := 0; i < len(value); {
		switch value[i] {
		case ' ':
			if allowBreaks && !spaces && w.column > yamlBestWidth && i > 0 && i < len(value)-1 && value[i+1] != ' ' {
				w.writeIndent()
			} else {
				w.put(' ')
			}
			i++
			spaces = true
		case '\'':
			w.buf = append(w.buf, "''"...)
			w.column += 2
			i++
			w.indention = false
			spaces = false
		default:
			j := i + 1
			for j < len(value) && value[j] != ' ' && value[j] != '\'' {
				j++
			}
			w.buf = append(w.buf, value[i:j]...)
			w.column += j - i
			i = j
			w.indention = false
			spaces = false
		}
	}
	w.writeIndicator("'", false, false, false)
	w.whitespace = false
	w.indention = false
}

func (w *yamlWriter) writeSingleQuoted(value string, allowBreaks bool) {
	w.writeIndicator("'", true, false, false)
	spaces, breaks := false, false
	for i := 0; i < len(value); {
		switch {
		case value[i] == ' ':
			if allowBreaks && !spaces && w.column > yamlBestWidth && i > 0 && i < len(value)-1 && value[i+1] != ' ' {
				w.writeIndent()
				i++
			} else {
				i = w.write(value, i)
			}
			spaces = true
		case isBreak(value, i):
			if !breaks && value[i] == '\n' {
				w.putBreak()
			}
			i = w.writeBreak(value, i)
			w.indention = true
			breaks = true
		default:
			if breaks {
				w.writeIndent()
			}
			if value[i] == '\'' {
				w.put('\'')
			}
			i = w.write(value, i)
			w.indention = false
			spaces, breaks = false, false
		}
	}
	w.writeIndicator("'", false, false, false)
	w.whitespace = false
	w.indention = false
}

func (w *yamlWriter) writeDoubleQuoted(value string, allowBreaks bool) {
	const hex = "0123456789ABCDEF"
	w.writeIndicator(`"`, true, false, false)
	// is_bom looks at the start of the value, whatever the index: a value
	// that starts with a BOM is escaped throughout.
	bom := strings.HasPrefix(value, "\ufeff")
	spaces := false
	for i := 0; i < len(value); {
		c := value[i]
		if bom || !isPrintable(value, i) || isBreak(value, i) || c == '"' || c == '\\' {
			r, n := utf8.DecodeRuneInString(value[i:])
			i += n
			w.put('\\')
			switch r {
			case 0x00:
				w.put('0')
			case 0x07:
				w.put('a')
			case 0x08:
				w.put('b')
			case 0x09:
				w.put('t')
			case 0x0A:
				w.put('n')
			case 0x0b:
				w.put('v')
			case 0x0c:
				w.put('f')
			case 0x0d:
				w.put('r')
			case 0x1b:
				w.put('e')
			case 0x22:
				w.put('"')
			case 0x5c:
				w.put('\\')
			case 0x85:
				w.put('N')
			case 0xA0:
				w.put('_')
			case 0x2028:
				w.put('L')
			case 0x2029:
				w.put('P')
			default:
				digits := 8
				switch {
				case r <= 0xFF:
					w.put('x')
					digits = 2
				case r <= 0xFFFF:
					w.put('u')
					digits = 4
				default:
					w.put('U')
				}
				for k := (digits - 1) * 4; k >= 0; k -= 4 {
					w.put(hex[(r>>uint(k))&0x0F])
				}
			}
			spaces = false
		} else if c == ' ' {
			if allowBreaks && !spaces && w.column > yamlBestWidth && i > 0 && i < len(value)-1 {
				w.writeIndent()
				if value[i+1] == ' ' {
					w.put('\\')
				}
				i++
			} else {
				i = w.write(value, i)
			}
			spaces = true
		} else {
			i = w.write(value, i)
			spaces = false
		}
	}
	w.writeIndicator(`"`, false, false, false)
	w.whitespace = false
	w.indention = false
}

func (w *yamlWriter) writeLiteral(value string) {
	w.writeLiteralHeader(value)
	breaks := true
	for i := 0; i < len(value); {
		if isBreak(value, i) {
			i = w.writeBreak(value, i)
			w.indention = true
			breaks = true
			continue
		}
		if breaks {
			w.writeIndent()
		}
		// A run of ASCII characters other than breaks.
		j := i
		for j < len(value) && value[j] != '\n' && value[j] != '\r' && value[j] < 0x80 {
			j++
		}
		if j > i {
			w.buf = append(w.buf, value[i:j]...)
			w.column += j - i
			i = j
		} else {
			i = w.write(value, i)
		}
		w.indention = false
		breaks = false
	}
}

// writeLiteralASCII is writeLiteral for printable ASCII and LF: the text
// is copied a line at a time.
func (w *yamlWriter) writeLiteralASCII(value string) {
	w.writeLiteralHeader(value)
	breaks := true
	for i := 0; i < len(value); {
		if value[i] == '\n' {
			w.putBreak()
			i++
			w.indention = true
			breaks = true
			continue
		}
		if breaks {
			w.writeIndent()
		}
		j := strings.IndexByte(value[i:], '\n')
		if j < 0 {
			j = len(value) - i
		}
		w.buf = append(w.buf, value[i:i+j]...)
		w.column += j
		i += j
		w.indention = false
		breaks = false
	}
}

// writeLiteralHeader writes the indicator, the block scalar hints and the
// break after them, and leaves the writer at the start of the text.
func (w *yamlWriter) writeLiteralHeader(value string) {
	w.writeIndicator("|", true, false, false)
	// yaml_emitter_write_block_scalar_hints.
	if value[0] == ' ' || isBreak(value, 0) {
		w.writeIndicator(string(rune('0'+yamlBestIndent)), false, false, false)
	}
	i := len(value) - 1
	for value[i]&0xC0 == 0x80 {
		i--
	}
	chomp := ""
	if !isBreak(value, i) {
		chomp = "-"
	} else if i == 0 {
		chomp = "+"
	} else {
		i--
		for value[i]&0xC0 == 0x80 {
			i--
		}
		if isBreak(value, i) {
			chomp = "+"
		}
	}
	if chomp != "" {
		w.writeIndicator(chomp, false, false, false)
	}
	w.putBreak()
	w.indention = true
	w.whitespace = true
}

// charWidth is the length of the UTF-8 sequence that starts with byte b
// (width in yamlprivateh.go; values are valid UTF-8).
func charWidth(b byte) int {
	switch {
	case b&0x80 == 0:
		return 1
	case b&0xE0 == 0xC0:
		return 2
	case b&0xF0 == 0xE0:
		return 3
	default:
		return 4
	}
}

// isPrintable is yamlprivateh.go's is_printable: LF, printable ASCII and
// the BMP but surrogates, U+FEFF, U+FFFE and U+FFFF (C1 controls and
// characters outside the BMP, emoji among them, are not).
func isPrintable(b string, i int) bool {
	c := b[i]
	return c == 0x0A ||
		c >= 0x20 && c <= 0x7E ||
		c == 0xC2 && b[i+1] >= 0xA0 ||
		c > 0xC2 && c < 0xED ||
		c == 0xED && b[i+1] < 0xA0 ||
		c == 0xEE ||
		c == 0xEF && !(b[i+1] == 0xBB && b[i+2] == 0xBF) && !(b[i+1] == 0xBF && (b[i+2] == 0xBE || b[i+2] == 0xBF))
}

// isBreak: CR, LF, NEL (U+0085), LS (U+2028), PS (U+2029).
func isBreak(b string, i int) bool {
	c := b[i]
	return c == '\r' || c == '\n' ||
		c == 0xC2 && b[i+1] == 0x85 ||
		c == 0xE2 && b[i+1] == 0x80 && (b[i+2] == 0xA8 || b[i+2] == 0xA9)
}

// isBlankZ is is_blankz for a valid index: a blank or a break (there is no
// NUL terminator; a NUL character counts, as there).
func isBlankZ(b string, i int) bool {
	c := b[i]
	return c == ' ' || c == '\t' || c == 0 || isBreak(b, i)
}

func hasBreak(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '\n' || c == '\r' || c == 0xC2 || c == 0xE2 {
			if isBreak(s, i) {
				return true
			}
		}
	}
	return false
}

// mappingKeys orders mapping keys as yaml.v2's keyList orders strings
// (sorter.go): at the first differing character, letters by code point
// after anything else, runs of digits by value. That order is not
// transitive for some sets of keys with digits ("01" < "10" < "1a" < "01"):
// yaml.v2's text for such a mapping depends on the order in which a Go map
// hands out its keys; writeYAML sorts them by bytes first and then with the
// same algorithm (sort.Sort) and comparison, so its text is the same on
// every run, and one of yaml.v2's. Where the order is a
// total order, which is the case for the keys of Kubernetes objects, the
// sorted keys are unique.
type mappingKeys []string

func (k mappingKeys) Len() int           { return len(k) }
func (k mappingKeys) Swap(i, j int)      { k[i], k[j] = k[j], k[i] }
func (k mappingKeys) Less(i, j int) bool { return keyLess(k[i], k[j]) }

func keyLess(a, b string) bool {
	if isASCII(a) && isASCII(b) {
		return runesLess(a, b, len(a), len(b), func(s string, i int) rune { return rune(s[i]) })
	}
	ar, br := []rune(a), []rune(b)
	return runesLess(ar, br, len(ar), len(br), func(s []rune, i int) rune { return s[i] })
}

func runesLess[S string | []rune](a, b S, la, lb int, at func(S, int) rune) bool {
	for i := 0; i < la && i < lb; i++ {
		ai, bi := at(a, i), at(b, i)
		if ai == bi {
			continue
		}
		al, bl := unicode.IsLetter(ai), unicode.IsLetter(bi)
		if al && bl {
			return ai < bi
		}
		if al || bl {
			return bl
		}
		var an, bn int64
		if ai == '0' || bi == '0' {
			for j := i - 1; j >= 0 && unicode.IsDigit(at(a, j)); j-- {
				if at(a, j) != '0' {
					an, bn = 1, 1
					break
				}
			}
		}
		ae, be := i, i
		for ; ae < la && unicode.IsDigit(at(a, ae)); ae++ {
			an = an*10 + int64(at(a, ae)-'0')
		}
		for ; be < lb && unicode.IsDigit(at(b, be)); be++ {
			bn = bn*10 + int64(at(b, be)-'0')
		}
		if an != bn {
			return an < bn
		}
		if ae != be {
			return ae < be
		}
		return ai < bi
	}
	return la < lb
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// isBase60Float is encode.go's: such strings are quoted for other YAML 1.1
// readers.
func isBase60Float(s string) bool {
	if s == "" {
		return false
	}
	c := s[0]
	if !(c == '+' || c == '-' || c >= '0' && c <= '9') || strings.IndexByte(s, ':') < 0 {
		return false
	}
	return base60float.MatchString(s)
}

var base60float = regexp.MustCompile(`^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`)
