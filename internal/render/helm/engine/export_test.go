package engine

import "text/template/parse"

// KeptTrees are the parse trees ts keeps, by the template file they were
// parsed from and their own name ("file\x00tree").
func (ts *Templates) KeptTrees() map[string]*parse.Tree {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	out := map[string]*parse.Tree{}
	for file, p := range ts.parsed {
		for name, tree := range p.trees {
			out[file+"\x00"+name] = tree
		}
	}
	return out
}
