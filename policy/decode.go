package policy

import (
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	yaml3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

// Problem is one thing wrong with a policy file, at its line (0: the file
// as a whole).
type Problem struct {
	Line    int
	Message string
}

func (p Problem) String() string {
	if p.Line <= 0 {
		return p.Message
	}
	return fmt.Sprintf("line %d: %s", p.Line, p.Message)
}

// maxProblems bounds what one message lists.
const maxProblems = 10

// problemsText is problems as one line: the first maxProblems, then how many
// more.
func problemsText(ps []Problem) string {
	var parts []string
	for i, p := range ps {
		if i == maxProblems {
			parts = append(parts, fmt.Sprintf("and %d more", len(ps)-maxProblems))
			break
		}
		parts = append(parts, p.String())
	}
	return strings.Join(parts, "; ")
}

// Check decodes and validates a policy file as Parse does. It returns the
// policy when the file is valid, else every problem of its structure
// (unknown fields with the known ones, wrong types, repeated keys), each at
// its line, or the first problem validation finds, at the line of what it
// names.
func Check(b []byte) (*Policy, []Problem) {
	var doc yaml3.Node
	if err := yaml3.Unmarshal(b, &doc); err != nil {
		line, msg := yamlError(err)
		return nil, []Problem{{Line: line, Message: errdef.Cut(msg)}}
	}
	var root *yaml3.Node
	if doc.Kind == yaml3.DocumentNode && len(doc.Content) == 1 {
		root = doc.Content[0]
	}
	var ps []Problem
	if root != nil {
		w := &walker{}
		w.value(root, reflect.TypeOf(File{}), "")
		ps = w.problems
	}
	if len(ps) > 0 {
		return nil, ps
	}
	// The walk found nothing: the decoder of record decides, as it always
	// did (what the walk lets through, such as YAML 1.1's yes for a
	// boolean, it reads the same).
	var f File
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		return nil, []Problem{{Message: errdef.Cut(err.Error())}}
	}
	p := &Policy{file: f, creds: map[string]Credential{}}
	if err := p.validate(); err != nil {
		return nil, []Problem{{Line: lineOf(root, err.Error()), Message: err.Error()}}
	}
	return p, nil
}

// walker checks a YAML node tree against the Go types the policy decodes
// into (their json tags), collecting problems with their lines.
type walker struct {
	problems []Problem
	// steps bounds the walk: aliases can make a small file a huge tree,
	// which the decoder of record refuses on its own.
	steps int
}

// maxWalkSteps is far above any policy's node count.
const maxWalkSteps = 1 << 20

func (w *walker) add(n *yaml3.Node, format string, args ...any) {
	w.problems = append(w.problems, Problem{Line: n.Line, Message: fmt.Sprintf(format, args...)})
}

// where names path for a message: "rules[0]", or "the policy" at the top.
func where(path string) string {
	if path == "" {
		return "the policy"
	}
	return path
}

func (w *walker) value(n *yaml3.Node, t reflect.Type, path string) {
	if w.steps++; w.steps > maxWalkSteps {
		return
	}
	for n.Kind == yaml3.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind == yaml3.ScalarNode && n.Tag == "!!null" {
		return // the zero value, for every type
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml3.MappingNode {
			w.add(n, "%s: want a mapping, got %s", where(path), nodeKind(n))
			return
		}
		w.mapping(n, t, path)
	case reflect.Slice:
		if n.Kind != yaml3.SequenceNode {
			w.add(n, "%s: want a list, got %s", where(path), nodeKind(n))
			return
		}
		for i, c := range n.Content {
			w.value(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Bool:
		if n.Kind != yaml3.ScalarNode || (n.Tag != "!!bool" && !(n.Style == 0 && yaml11Bool(n.Value))) {
			w.add(n, "%s: want true or false, got %s", where(path), nodeKind(n))
		}
	case reflect.String:
		if n.Kind != yaml3.ScalarNode || n.Tag != "!!str" {
			w.add(n, "%s: want a string, got %s (quote it)", where(path), nodeKind(n))
		}
	}
}

func (w *walker) mapping(n *yaml3.Node, t reflect.Type, path string) {
	fields := map[string]reflect.Type{}
	var known []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		fields[name] = f.Type
		known = append(known, name)
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml3.ScalarNode && k.Tag == "!!merge" {
			continue // a merge key ("<<: *anchor"): the decoder merges it
		}
		if k.Kind != yaml3.ScalarNode {
			w.add(k, "%s: a key must be a string, got %s", where(path), nodeKind(k))
			continue
		}
		child := k.Value
		if path != "" {
			child = path + "." + k.Value
		}
		if first, dup := seen[k.Value]; dup {
			w.add(k, "field %s is repeated in %s (first at line %d)", errdef.Quote(k.Value), where(path), first)
			continue
		}
		seen[k.Value] = k.Line
		ft, ok := fields[k.Value]
		if !ok {
			w.add(k, "unknown field %s in %s (known: %s)", errdef.Quote(k.Value), where(path), strings.Join(known, ", "))
			continue
		}
		w.value(v, ft, child)
	}
}

// yaml11Bool: the plain scalars YAML 1.1, which the decoder of record
// speaks, reads as booleans.
func yaml11Bool(s string) bool {
	switch s {
	case "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO",
		"true", "True", "TRUE", "false", "False", "FALSE",
		"on", "On", "ON", "off", "Off", "OFF":
		return true
	}
	return false
}

func nodeKind(n *yaml3.Node) string {
	switch n.Kind {
	case yaml3.MappingNode:
		return "a mapping"
	case yaml3.SequenceNode:
		return "a list"
	}
	switch n.Tag {
	case "!!str":
		return "a string"
	case "!!int", "!!float":
		return "a number"
	case "!!bool":
		return "a boolean"
	}
	return "a " + strings.TrimPrefix(n.Tag, "!!")
}

var (
	yamlLineRe = regexp.MustCompile(`\bline (\d+)\b`)
	// A path step at the start of a validation message: "rules[0]",
	// "rules[0] (team-a)", "repositories[2]", "default", "plainHTTP".
	stepRe = regexp.MustCompile(`^([A-Za-z]+)(?:\[(\d+)\])?(?: \([^)]*\))?$`)
)

// yamlError splits a YAML syntax error into its line and the rest.
func yamlError(err error) (int, string) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if m := yamlLineRe.FindStringSubmatchIndex(msg); m != nil && m[0] == 0 {
		n, _ := strconv.Atoi(msg[m[2]:m[3]])
		return n, strings.TrimPrefix(msg[m[1]:], ": ")
	}
	return 0, msg
}

// lineOf is the line of what a validation message names with its leading
// path ("rules[0] (a): repositories[1]: host …"): as deep as the steps
// lead through the document, 0 when the first does not.
func lineOf(root *yaml3.Node, msg string) int {
	n, line := root, 0
	for _, step := range strings.Split(msg, ": ") {
		m := stepRe.FindStringSubmatch(step)
		if m == nil || n == nil {
			break
		}
		n = child(n, m[1])
		if n == nil {
			break
		}
		if m[2] != "" {
			i, _ := strconv.Atoi(m[2])
			if n.Kind != yaml3.SequenceNode || i >= len(n.Content) {
				break
			}
			n = n.Content[i]
		}
		line = n.Line
	}
	return line
}

// child is the value of key in mapping n, nil if none.
func child(n *yaml3.Node, key string) *yaml3.Node {
	for n != nil && n.Kind == yaml3.AliasNode {
		n = n.Alias
	}
	if n == nil || n.Kind != yaml3.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			v := n.Content[i+1]
			for v.Kind == yaml3.AliasNode && v.Alias != nil {
				v = v.Alias
			}
			return v
		}
	}
	return nil
}

// Summary is the policy in one line: its rules, credentials, mirrors and
// extra addresses, as `policy check` prints it.
func (p *Policy) Summary() string {
	f := p.file
	def := "no default rule (a project no rule matches may read nothing)"
	if f.Default != nil {
		def = "a default rule"
	}
	return fmt.Sprintf("%s, %s, %s, %s, %s", count(len(f.Rules), "rule", "rules"), def, count(len(f.Credentials), "credential", "credentials"),
		count(len(f.Mirrors), "mirrored upstream", "mirrored upstreams"), count(len(f.AllowAddresses), "allowed address", "allowed addresses"))
}

func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
