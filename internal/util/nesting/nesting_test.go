package nesting_test

import (
	"errors"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/nesting"
)

// maps returns n maps nested in each other around a scalar: n levels deep.
func maps(n int) any {
	var v any = "x"
	for range n {
		v = map[string]any{"a": v}
	}
	return v
}

func lists(n int) any {
	var v any = 1
	for range n {
		v = []any{v}
	}
	return v
}

type named map[string]interface{}

type node struct {
	Next *node
	Name string
}

func TestCheckCountsMapsAndLists(t *testing.T) {
	chain := func(n int) *node {
		var p *node
		for range n {
			p = &node{Next: p}
		}
		return p
	}
	for _, tc := range []struct {
		name string
		v    any
		deep bool
	}{
		{"scalar", "x", false},
		{"empty map", map[string]any{}, false},
		{"maps at the bound", maps(nesting.MaxDepth), false},
		{"maps past the bound", maps(nesting.MaxDepth + 1), true},
		{"lists at the bound", lists(nesting.MaxDepth), false},
		{"lists past the bound", lists(nesting.MaxDepth + 1), true},
		{"far past the bound", maps(10_000), true},
		{"a map below a named map type", named{"a": maps(nesting.MaxDepth)}, true},
		{"a yaml.v2 map", map[any]any{"a": lists(nesting.MaxDepth)}, true},
		{"structs at the bound", chain(nesting.MaxDepth), false},
		{"structs past the bound", chain(nesting.MaxDepth + 1), true},
		{"typed slices", [][]map[string]any{{maps(nesting.MaxDepth - 2).(map[string]any)}}, false},
		{"typed slices past", [][]map[string]any{{maps(nesting.MaxDepth - 1).(map[string]any)}}, true},
		{"bytes are a scalar", map[string]any{"b": []byte("xyz")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := nesting.Check(tc.v)
			if got := err != nil; got != tc.deep {
				t.Fatalf("Check = %v, want refused %v", err, tc.deep)
			}
			if nesting.Within(tc.v) == tc.deep {
				t.Errorf("Within disagrees with Check")
			}
			if err != nil && (!errors.Is(err, errdef.ErrLimitExceeded) || !strings.Contains(err.Error(), "nested more than 128 levels deep")) {
				t.Errorf("error %q does not name the bound or is no ErrLimitExceeded", err)
			}
		})
	}
}

func TestCheckNodeFollowsAliases(t *testing.T) {
	flow := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	// Anchors that each alias the one before twice: 200 levels deep once
	// expanded, 2^200 nodes (each measured once).
	var chain strings.Builder
	chain.WriteString("a0: &a0 [1]\n")
	for i := 1; i <= 200; i++ {
		chain.WriteString("a" + itoa(i) + ": &a" + itoa(i) + " [*a" + itoa(i-1) + ", *a" + itoa(i-1) + "]\n")
	}
	for _, tc := range []struct {
		name, doc string
		deep      bool
	}{
		{"at the bound", flow(nesting.MaxDepth), false},
		{"past the bound", flow(nesting.MaxDepth + 1), true},
		{"block style past the bound", blockMaps(nesting.MaxDepth + 1), true},
		{"block style at the bound", blockMaps(nesting.MaxDepth), false},
		{"aliases past the bound", chain.String(), true},
		{"alias at the bound", "a: &x " + flow(nesting.MaxDepth-1) + "\nb: *x\n", false},
		{"alias below a deep list", "a: &x " + flow(10) + "\nb: " + strings.Repeat("[", nesting.MaxDepth-10) + "*x" + strings.Repeat("]", nesting.MaxDepth-10) + "\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n yaml.Node
			if err := yaml.Unmarshal([]byte(tc.doc), &n); err != nil {
				t.Fatal(err)
			}
			if err := nesting.CheckNode(&n); (err != nil) != tc.deep {
				t.Fatalf("CheckNode = %v, want refused %v", err, tc.deep)
			}
		})
	}
}

// blockMaps is a block-style map nested n levels deep.
func blockMaps(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(strings.Repeat(" ", i) + "a:\n")
	}
	b.WriteString(strings.Repeat(" ", n) + "b")
	return b.String()
}

func TestCheckText(t *testing.T) {
	for _, tc := range []struct {
		text string
		deep bool
	}{
		{strings.Repeat("[", 128) + strings.Repeat("]", 128), false},
		{strings.Repeat("[", 129) + strings.Repeat("]", 129), true},
		{strings.Repeat(`{"a":`, 129) + "1" + strings.Repeat("}", 129), true},
		{`{"a": "` + strings.Repeat("[", 500) + `"}`, false},
		{`{"a": "\"` + strings.Repeat("[", 500) + `"}`, false},
		{strings.Repeat("[[]]", 10_000), false},
	} {
		if err := nesting.CheckText([]byte(tc.text)); (err != nil) != tc.deep {
			t.Errorf("CheckText(%.40s…) = %v, want refused %v", tc.text, err, tc.deep)
		}
	}
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}
