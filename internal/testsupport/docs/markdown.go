package docs

import (
	"fmt"
	"regexp"
	"strings"
)

// Kinds of blocks the test runs or validates.
const (
	Shell = "shell"
	YAML  = "yaml"
)

// Markers (see the package documentation).
const (
	NeedsCluster   = "needs-cluster"
	NoRun          = "no-run"
	DefinitionSpec = "definition-spec"
	PlatformConfig = "platform-config"
	Fragment       = "fragment"
)

var knownMarkers = map[string]string{NeedsCluster: Shell, NoRun: Shell, DefinitionSpec: YAML, PlatformConfig: YAML, Fragment: YAML}

// Block is one fenced code block of a Markdown file.
type Block struct {
	File   string // as given to Extract
	Line   int    // of the opening fence, 1-based
	Kind   string // Shell, YAML, or "" (not checked: output, text, other languages)
	Lang   string // the fence's info string
	Marker string // docs-test marker before the fence, "" if none
	Reason string // text after the marker
	Text   string // content, indentation of the fence removed
}

func (b Block) String() string { return fmt.Sprintf("%s:%d", b.File, b.Line) }

var (
	fenceRE  = regexp.MustCompile("^( *)(```+|~~~+)\\s*([A-Za-z0-9_+-]*)")
	markerRE = regexp.MustCompile(`^\s*<!--\s*docs-test:\s*([a-z-]+)\s*(.*?)\s*-->\s*$`)
)

// Extract returns the fenced code blocks of a Markdown document. A marker
// must be on the last non-blank line before a fence; an unknown marker, a
// marker for the wrong kind of block, or an unclosed fence is an error.
func Extract(file string, md []byte) ([]Block, error) {
	lines := strings.Split(strings.ReplaceAll(string(md), "\r\n", "\n"), "\n")
	var out []Block
	lastText := "" // last non-blank line outside blocks
	for i := 0; i < len(lines); i++ {
		m := fenceRE.FindStringSubmatch(lines[i])
		if m == nil {
			if strings.TrimSpace(lines[i]) != "" {
				lastText = lines[i]
			}
			continue
		}
		indent, fence, lang := len(m[1]), m[2], strings.ToLower(m[3])
		b := Block{File: file, Line: i + 1, Lang: lang}
		switch lang {
		case "sh", "bash", "shell":
			b.Kind = Shell
		case "yaml", "yml":
			b.Kind = YAML
		}
		if mm := markerRE.FindStringSubmatch(lastText); mm != nil {
			want, ok := knownMarkers[mm[1]]
			if !ok {
				return nil, fmt.Errorf("%s: unknown docs-test marker %q", b, mm[1])
			}
			if want != b.Kind {
				return nil, fmt.Errorf("%s: docs-test marker %q is for %s blocks, not %q", b, mm[1], want, lang)
			}
			b.Marker, b.Reason = mm[1], mm[2]
		}
		var body []string
		closed := false
		for i++; i < len(lines); i++ {
			if strings.HasPrefix(strings.TrimLeft(lines[i], " "), fence[:3]) && strings.TrimSpace(strings.TrimLeft(lines[i], " ")[len(fence):]) == "" &&
				strings.HasPrefix(strings.TrimLeft(lines[i], " "), fence) {
				closed = true
				break
			}
			l := lines[i]
			// Content of a fence inside a list item is indented like the fence.
			n := len(l) - len(strings.TrimLeft(l, " "))
			l = l[min(n, indent):]
			body = append(body, l)
		}
		if !closed {
			return nil, fmt.Errorf("%s: unclosed code fence", b)
		}
		b.Text = strings.Join(body, "\n") + "\n"
		out = append(out, b)
		lastText = ""
	}
	return out, nil
}
