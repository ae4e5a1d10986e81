package engine_test

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"text/template/parse"

	chart "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/helm/engine"
)

// A template's kept parse is shared by every chart with that template file
// (same name, same text), but what it names is not: `define`s are global
// to a render's set, and a kept parse holds only what its own file defines.
// Tenants whose charts share app/templates/cm.yaml word for word, each with
// its own helper file defining "who" (another file name, or none at all),
// render in turn and at once with one Templates: each gets what Helm
// renders for its own chart — its own "who", or Helm's error when it
// defines none —, never another tenant's.
func TestKeptParseUsesOwnDefines(t *testing.T) {
	cm := "who: {{ include \"who\" . }} {{ template \"who\" . }}\n"
	tenants := map[string]func() *chart.Chart{
		"a": func() *chart.Chart {
			return tplChart("app", map[string]string{"templates/cm.yaml": cm, "templates/_a.tpl": `{{ define "who" }}secret-of-a{{ end }}`})
		},
		"b": func() *chart.Chart {
			return tplChart("app", map[string]string{"templates/cm.yaml": cm, "templates/_b.tpl": `{{ define "who" }}b{{ end }}`})
		},
		"none": func() *chart.Chart {
			return tplChart("app", map[string]string{"templates/cm.yaml": cm})
		},
		// An empty define does not replace a template of that name (Helm's
		// rule); with nothing else defining "who", it is what renders.
		"empty": func() *chart.Chart {
			return tplChart("app", map[string]string{"templates/cm.yaml": cm, "templates/_z.tpl": `{{ define "who" }}{{ end }}`})
		},
		// cm.yaml's own name redefined by another file: the render executes
		// the redefinition, as Helm's does, not the kept cm.yaml.
		"shadow": func() *chart.Chart {
			return tplChart("app", map[string]string{"templates/cm.yaml": cm, "templates/_s.tpl": `{{ define "app/templates/cm.yaml" }}shadowed{{ end }}{{ define "who" }}s{{ end }}`})
		},
	}
	want := map[string]outcome{}
	for name, mk := range tenants {
		c := mk()
		want[name] = helmRender(c, renderValues(t, c, nil))
	}
	if want["none"].err == "" || !strings.Contains(want["a"].files["app/templates/cm.yaml"], "secret-of-a") {
		t.Fatalf("Helm's renders are not what the test is for: %+v", want)
	}
	ts := engine.NewTemplates(1 << 30)
	order := []string{"a", "none", "b", "a", "empty", "shadow", "none", "b", "a"}
	for _, name := range order {
		c := tenants[name]()
		same(t, "tenant "+name+" in turn", ourRender(engine.Engine{Templates: ts}, c, renderValues(t, c, nil)), want[name], want[name])
	}
	var wg sync.WaitGroup
	errs := make(chan string, 200)
	for i := range 200 {
		name := order[i%len(order)]
		wg.Go(func() {
			c := tenants[name]()
			got := ourRender(engine.Engine{Templates: ts}, c, renderValues(t, c, nil))
			if w := want[name]; got.err != w.err || !reflect.DeepEqual(got.files, w.files) {
				errs <- fmt.Sprintf("tenant %s: %+v, Helm's %+v", name, got, w)
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// treeSnapshot is a kept tree as it was: the tree, and a dump of every
// field of it and of its nodes.
type treeSnapshot struct {
	tree *parse.Tree
	dump string
}

func snapshot(ts *engine.Templates) map[string]treeSnapshot {
	out := map[string]treeSnapshot{}
	for name, tree := range ts.KeptTrees() {
		out[name] = treeSnapshot{tree: tree, dump: dumpTree(tree)}
	}
	return out
}

// dumpTree writes every field of tree and of the nodes it reaches, exported
// or not; a node's pointer back to its tree is written as an address.
func dumpTree(tree *parse.Tree) string {
	var b strings.Builder
	treeType := reflect.TypeFor[*parse.Tree]()
	var walk func(v reflect.Value, top bool)
	walk = func(v reflect.Value, top bool) {
		switch v.Kind() {
		case reflect.Pointer:
			if v.IsNil() {
				b.WriteString("nil")
				return
			}
			if v.Type() == treeType && !top {
				fmt.Fprintf(&b, "tree@%x", v.Pointer())
				return
			}
			b.WriteString("&")
			walk(v.Elem(), false)
		case reflect.Interface:
			if v.IsNil() {
				b.WriteString("nil")
				return
			}
			fmt.Fprintf(&b, "%s:", v.Elem().Type())
			walk(v.Elem(), false)
		case reflect.Struct:
			b.WriteString("{")
			for i := range v.NumField() {
				fmt.Fprintf(&b, "%s=", v.Type().Field(i).Name)
				walk(v.Field(i), false)
				b.WriteString(" ")
			}
			b.WriteString("}")
		case reflect.Slice, reflect.Array:
			fmt.Fprintf(&b, "[%d:", v.Len())
			for i := range v.Len() {
				walk(v.Index(i), false)
				b.WriteString(",")
			}
			b.WriteString("]")
		case reflect.Map:
			fmt.Fprintf(&b, "map[%d]@%x", v.Len(), v.Pointer())
		case reflect.String:
			fmt.Fprintf(&b, "%q", v.String())
		case reflect.Bool:
			fmt.Fprint(&b, v.Bool())
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			fmt.Fprint(&b, v.Int())
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			fmt.Fprint(&b, v.Uint())
		case reflect.Float32, reflect.Float64:
			fmt.Fprint(&b, v.Float())
		case reflect.Complex64, reflect.Complex128:
			fmt.Fprint(&b, v.Complex())
		default:
			fmt.Fprintf(&b, "<%s>", v.Kind())
		}
	}
	walk(reflect.ValueOf(tree), true)
	return b.String()
}

// unchanged fails when a kept tree is not the one snapshotted, or differs
// from it in a field of the tree or of a node.
func unchanged(t *testing.T, what string, ts *engine.Templates, snap map[string]treeSnapshot) {
	t.Helper()
	kept := ts.KeptTrees()
	if len(kept) != len(snap) {
		t.Fatalf("%s: %d kept trees, were %d", what, len(kept), len(snap))
	}
	for name, s := range snap {
		tree := kept[name]
		if tree != s.tree {
			t.Fatalf("%s: kept tree %q replaced", what, name)
		}
		if d := dumpTree(tree); d != s.dump {
			t.Fatalf("%s: kept tree %q changed:\n%s\n--- was:\n%s", what, name, d, s.dump)
		}
	}
}

// Executing kept parse trees never changes them: after renders of real and
// corner-case charts (tpl defining and redefining templates in its clone of
// the set, include, recursion, errors, redefinitions across files),
// sequential and concurrent, every kept tree is the same tree, field for
// field and node for node.
func TestKeptTreesNeverChanged(t *testing.T) {
	jobs := engineCases(t)
	render := func(ts *engine.Templates, j engineCase) {
		c := j.chart()
		ourRender(engine.Engine{Templates: ts}, c, renderValues(t, c, deepCopy(j.vals)))
	}
	ts := engine.NewTemplates(1 << 30)
	for _, j := range jobs {
		render(ts, j)
	}
	snap := snapshot(ts)
	if len(snap) < 100 {
		t.Fatalf("only %d kept trees: the test does not reach what it is for", len(snap))
	}
	unchanged(t, "right after the snapshot", ts, snap)
	for _, j := range jobs {
		render(ts, j)
	}
	unchanged(t, "after renders one at a time", ts, snap)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for _, j := range jobs {
				render(ts, j)
			}
		})
	}
	wg.Wait()
	unchanged(t, "after concurrent renders", ts, snap)
}
