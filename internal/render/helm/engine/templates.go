package engine

import (
	"sync"
	"text/template"
	"text/template/parse"
	"unsafe"
)

// Templates keeps the parsed templates of one chart between its renders.
// Helm's engine parses every template file of a chart (and of its enabled
// subcharts) in every render before it executes any: 40-70 % of the
// engine's time on real charts, the same work every time for the same text.
//
// A template is kept by the name the engine gives it (the chart's path and
// the file's: "kps/charts/grafana/templates/_helpers.tpl") together with the
// text it was parsed from, and used only for exactly that text: a kept parse
// is never used for other input, whatever the name. What is kept is what
// Template.Parse adds to the engine's set for that text — the file's tree
// and the trees it defines —, parsed alone with the engine's function names:
// a parse does not depend on the rest of the set, so adding those trees to
// each render's set (Template.AddParseTree, which applies the same rules as
// Parse to redefinitions) gives that render the set Helm's parse would have
// built. Parse trees are never changed by executing them (text/template
// executes them concurrently; Helm's own tpl function shares them between a
// set and its clones), so renders share them; each render has its own set,
// functions and values.
//
// A Templates holds at most one parse per name (a changed text replaces it)
// and at most its bound of bytes (Cost): a parse that does not fit is used
// by the render that made it and not kept. It is safe for concurrent use.
type Templates struct {
	max int64

	mu     sync.Mutex
	parsed map[string]*parsed
	size   int64
}

// parsed is one template file's parse: the trees Template.Parse adds to a
// set, by name. Never changed once made.
type parsed struct {
	text  string
	trees map[string]*parse.Tree
	cost  int64
	// data are the bytes text was made from: a chart file's, which a later
	// render of the same kept chart hands in again (see parsedFrom).
	data []byte
}

// parsedFrom reports whether p is the parse of data: data are the very
// bytes p was parsed from (a kept chart's file; renders never change the
// files' bytes, see helm.ChartCache, and p keeps them, so their address is
// not reused), or hold the same text. The first is the common case and
// reads none of the bytes: comparing every template's text on every render
// was 2 % of a warm cert-manager generation, copying it into a string 4 %.
func (p *parsed) parsedFrom(data []byte) bool {
	if len(data) != len(p.text) {
		return false
	}
	if len(data) == 0 || unsafe.SliceData(data) == unsafe.SliceData(p.data) {
		return true
	}
	return string(data) == p.text
}

// NewTemplates returns an empty Templates that keeps at most maxBytes of
// parses (see Cost).
func NewTemplates(maxBytes int64) *Templates {
	return &Templates{max: maxBytes, parsed: map[string]*parsed{}}
}

// Len is the number of template files kept; Size what they are counted at.
func (ts *Templates) Len() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return len(ts.parsed)
}

// Size is the bytes the kept parses are counted at (see Cost).
func (ts *Templates) Size() int64 {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.size
}

// add adds the trees of data to t's set as t.Parse(string(data)) adds
// them, parsing data only when its text was not parsed under t's name
// before.
func (ts *Templates) add(t *template.Template, data []byte) error {
	name := t.Name()
	ts.mu.Lock()
	p := ts.parsed[name]
	ts.mu.Unlock()
	if p == nil || !p.parsedFrom(data) {
		var err error
		if p, err = parseAlone(name, string(data)); err != nil {
			return err
		}
		p.data = data
		ts.keep(name, p)
	}
	for treeName, tree := range p.trees {
		if _, err := t.AddParseTree(treeName, tree); err != nil {
			return err
		}
	}
	return nil
}

// keep keeps p under name when it fits, replacing a parse of another text.
func (ts *Templates) keep(name string, p *parsed) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	old := ts.parsed[name]
	size := ts.size + p.cost
	if old != nil {
		size -= old.cost
	}
	if size > ts.max {
		return
	}
	ts.parsed[name] = p
	ts.size = size
}

// parseFuncs are the functions a template may name when it is parsed:
// those of initFunMap, which replaces some of funcMap's by name only.
var parseFuncs = sync.OnceValue(funcMap)

// parseAlone parses text as the engine's Template.Parse does (the same
// name, default delimiters, the engine's function names), in a set of its
// own, and returns every tree the parse added.
func parseAlone(name, text string) (*parsed, error) {
	t, err := template.New(name).Funcs(parseFuncs()).Parse(text)
	if err != nil {
		return nil, err
	}
	p := &parsed{text: text, trees: map[string]*parse.Tree{}, cost: int64(len(text))}
	for _, d := range t.Templates() {
		p.trees[d.Name()] = d.Tree
		p.cost += treeOverhead + int64(len(d.Name())) + treeCost(d.Tree.Root)
	}
	return p, nil
}

// treeOverhead is what a tree is counted at beyond its nodes (the Tree, its
// name, the map entry); nodeCost what a node is counted at beyond its
// strings and the entries of its slices (the largest node struct, rounded
// up as it is allocated).
const treeOverhead, nodeCost = 320, 96

// treeCost counts the nodes of a parse tree and the strings they hold (a
// tree also holds the text it was parsed from: counted once, by parseAlone).
// What it counts is at least what the tree holds: the bound of Templates
// holds for any text, also one dense in actions.
func treeCost(n parse.Node) int64 {
	if n == nil {
		return 0
	}
	cost := int64(nodeCost)
	strs := func(ss []string) {
		for _, s := range ss {
			cost += 16 + int64(len(s))
		}
	}
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return 0
		}
		for _, c := range n.Nodes {
			cost += 16 + treeCost(c)
		}
	case *parse.TextNode:
		cost += int64(len(n.Text))
	case *parse.CommentNode:
		cost += int64(len(n.Text))
	case *parse.ActionNode:
		cost += treeCost(n.Pipe)
	case *parse.PipeNode:
		if n == nil {
			return 0
		}
		for _, v := range n.Decl {
			cost += 8 + treeCost(v)
		}
		for _, c := range n.Cmds {
			cost += 8 + treeCost(c)
		}
	case *parse.CommandNode:
		for _, a := range n.Args {
			cost += 16 + treeCost(a)
		}
	case *parse.IfNode:
		cost += treeCost(n.Pipe) + treeCost(n.List) + treeCost(n.ElseList)
	case *parse.RangeNode:
		cost += treeCost(n.Pipe) + treeCost(n.List) + treeCost(n.ElseList)
	case *parse.WithNode:
		cost += treeCost(n.Pipe) + treeCost(n.List) + treeCost(n.ElseList)
	case *parse.TemplateNode:
		cost += int64(len(n.Name)) + treeCost(n.Pipe)
	case *parse.ChainNode:
		cost += treeCost(n.Node)
		strs(n.Field)
	case *parse.FieldNode:
		strs(n.Ident)
	case *parse.VariableNode:
		strs(n.Ident)
	case *parse.IdentifierNode:
		cost += int64(len(n.Ident))
	case *parse.StringNode:
		cost += int64(len(n.Quoted) + len(n.Text))
	case *parse.NumberNode:
		cost += int64(len(n.Text))
	}
	return cost
}
