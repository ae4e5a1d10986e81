package graph

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/kubernetes-sigs/kro/pkg/graph/dag"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/rgd/cel"
)

// Analyze collects the expressions of every node, their references, and
// refuses what a static render cannot do: reading the status of a node that
// is not an OCM Resource (it exists only in a cluster), includeWhen over
// other nodes, a Secret whose data comes from a plain parameter. It returns
// the nodes in evaluation order (a topological order of the references,
// declaration order among equals) and each node's level (1 + the highest
// level of what it reads).
func (r *RGD) Analyze() ([]*Node, map[string]int, error) {
	byID := map[string]*Node{}
	for _, n := range r.Nodes {
		byID[n.ID] = n
	}
	total := 0
	for _, n := range r.Nodes {
		if err := r.analyzeNode(n, byID, &total); err != nil {
			return nil, nil, err
		}
	}
	order, err := r.topo(byID)
	if err != nil {
		return nil, nil, err
	}
	return order, nodeLevels(order), nil
}

// analyzeNode collects the expressions of one node (total counts them over
// the RGD), checks them and its forEach and includeWhen, and sets its deps.
func (r *RGD) analyzeNode(n *Node, byID map[string]*Node, total *int) error {
	n.Exprs = nil
	if err := collect(n.Template, "template", &n.Exprs, total); err != nil {
		return fmt.Errorf("%w: %s: node %s: %v", errdef.ErrInvalidInput, r.Source, n.ID, err)
	}
	for _, e := range n.Exprs {
		if e.Path == "template.apiVersion" || e.Path == "template.kind" {
			// As kro: it resolves a node's schema from them before anything
			// is evaluated. A static render decides from them what a node
			// is (emitted, interpreted, dropped, a Secret).
			return fmt.Errorf("%w: %s: node %s: %s: ${%s}: apiVersion and kind are literal, not expressions", errdef.ErrInvalidInput, r.Source, n.ID, e.Path, errdef.Cut(e.Expr))
		}
	}
	if av, _ := n.Template["apiVersion"].(string); av == "" {
		return fmt.Errorf("%w: %s: node %s: the template has no apiVersion", errdef.ErrInvalidInput, r.Source, n.ID)
	}
	if k, _ := n.Template["kind"].(string); k == "" {
		return fmt.Errorf("%w: %s: node %s: the template has no kind", errdef.ErrInvalidInput, r.Source, n.ID)
	}
	deps, err := r.templateDeps(n, byID)
	if err != nil {
		return err
	}
	if err := r.checkForEach(n, byID); err != nil {
		return err
	}
	if err := r.checkIncludeWhen(n, byID); err != nil {
		return err
	}
	n.Deps = slices.Sorted(maps.Keys(deps))
	return nil
}

// templateDeps are the other nodes a node's template reads; reading the
// status of a node that is not an OCM Resource, or a Secret filled from a
// parameter, is refused.
func (r *RGD) templateDeps(n *Node, byID map[string]*Node) (map[string]bool, error) {
	deps := map[string]bool{}
	for _, e := range n.Exprs {
		refs, err := cel.Check(e.Expr)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: node %s: %s: expression ${%s}: %v", errdef.ErrInvalidInput, r.Source, n.ID, e.Path, errdef.Cut(e.Expr), err)
		}
		for _, ref := range refs {
			dep, ok := byID[ref.Var]
			if !ok {
				if celTypeNames[ref.Var] && !slices.ContainsFunc(n.Iterators, func(it Iterator) bool { return it.Name == ref.Var }) {
					// kro's builder checks every identifier against the
					// nodes and schema: CEL's type names are unknown to it.
					return nil, fmt.Errorf("%w: %s: node %s: %s: ${%s}: references unknown identifiers: [%s] (kro refuses CEL type names as identifiers; compare with type(…) of a value)",
						errdef.ErrInvalidInput, r.Source, n.ID, e.Path, errdef.Cut(e.Expr), ref.Var)
				}
				continue
			}
			if ref.Field == "status" && !IsOCMResource(dep.Template) {
				g, k := GVK(dep.Template)
				return nil, fmt.Errorf("%w: %s: node %s: %s: ${%s} reads the status of node %s (%s), which only a cluster has; a static render knows the status of OCM Resource nodes only",
					errdef.ErrInvalidInput, r.Source, n.ID, e.Path, errdef.Cut(e.Expr), dep.ID, GroupKind(g, k))
			}
			if dep.ID != n.ID {
				deps[dep.ID] = true
			}
		}
		if err := checkSecret(r, n, e, refs); err != nil {
			return nil, err
		}
	}
	return deps, nil
}

// checkForEach refuses a collection of an interpreted kind, and iterators
// over other nodes: only the instance spec's lists are known without a
// cluster.
func (r *RGD) checkForEach(n *Node, byID map[string]*Node) error {
	if len(n.Iterators) > 0 {
		if g, k := GVK(n.Template); !PlainKind(g, k) {
			return fmt.Errorf("%w: %s: node %s: forEach over a %s node is not supported by the static render (only objects emitted as they are: not OCM, Flux, Argo CD or kro nodes)",
				errdef.ErrInvalidInput, r.Source, n.ID, GroupKind(g, k))
		}
	}
	for i, it := range n.Iterators {
		es, _ := cel.Expressions(it.Expr)
		for _, x := range es {
			refs, err := cel.Check(x)
			if err != nil {
				return fmt.Errorf("%w: %s: node %s: forEach[%d] (%s): %v", errdef.ErrInvalidInput, r.Source, n.ID, i, it.Name, err)
			}
			for _, ref := range refs {
				if _, ok := byID[ref.Var]; ok {
					return fmt.Errorf("%w: %s: node %s: forEach[%d] (%s) reads %s: only lists of the instance spec (schema.spec) are known without a cluster",
						errdef.ErrInvalidInput, r.Source, n.ID, i, it.Name, ref.Var)
				}
			}
		}
	}
	return nil
}

// checkIncludeWhen refuses conditions over other nodes: only conditions
// over schema are known without a cluster.
func (r *RGD) checkIncludeWhen(n *Node, byID map[string]*Node) error {
	for i, w := range n.IncludeWhen {
		es, err := cel.Expressions(w)
		if err != nil {
			return fmt.Errorf("%w: %s: node %s: includeWhen[%d]: %v", errdef.ErrInvalidInput, r.Source, n.ID, i, err)
		}
		for _, x := range es {
			refs, err := cel.Check(x)
			if err != nil {
				return fmt.Errorf("%w: %s: node %s: includeWhen[%d]: %v", errdef.ErrInvalidInput, r.Source, n.ID, i, err)
			}
			for _, ref := range refs {
				if _, ok := byID[ref.Var]; ok {
					return fmt.Errorf("%w: %s: node %s: includeWhen[%d] reads node %s: only conditions over schema are known without a cluster",
						errdef.ErrInvalidInput, r.Source, n.ID, i, ref.Var)
				}
			}
		}
	}
	return nil
}

// nodeLevels is each node's level: 0 for a node that reads no other, else
// 1 + the highest level of what it reads (order is topological).
func nodeLevels(order []*Node) map[string]int {
	level := map[string]int{}
	for _, n := range order {
		l := 0
		for _, d := range n.Deps {
			l = max(l, level[d]+1)
		}
		level[n.ID] = l
	}
	return level
}

// collect gathers the ${…} expressions of a template, with their paths.
func collect(v any, path string, out *[]Located, total *int) error {
	switch v := v.(type) {
	case string:
		es, err := cel.Expressions(v)
		if err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
		for _, e := range es {
			*total++
			if *total > MaxExpressions {
				return fmt.Errorf("more than %d expressions: %w", MaxExpressions, errdef.ErrLimitExceeded)
			}
			*out = append(*out, Located{path, e})
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if err := collect(v[k], path+"."+k, out, total); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range v {
			if err := collect(e, path+"["+strconv.Itoa(i)+"]", out, total); err != nil {
				return err
			}
		}
	}
	return nil
}

// topo orders the nodes with kro's DAG (pkg/graph/dag): each after what it
// reads, declaration order among the nodes ready next; a cycle is refused
// naming it.
func (r *RGD) topo(byID map[string]*Node) ([]*Node, error) {
	d := dag.NewDirectedAcyclicGraph[string]()
	for _, n := range r.Nodes {
		if err := d.AddVertex(n.ID, n.Index); err != nil {
			return nil, fmt.Errorf("%w: %s: node %s: %v", errdef.ErrInvalidInput, r.Source, n.ID, err)
		}
	}
	for _, n := range r.Nodes {
		if err := d.AddDependencies(n.ID, n.Deps); err != nil {
			if ce := dag.AsCycleError[string](err); ce != nil && len(ce.Cycle) > 0 {
				return nil, fmt.Errorf("%w: %s: the nodes read each other in a cycle: %s", errdef.ErrInvalidInput, r.Source, strings.Join(ce.Cycle, " -> "))
			}
			return nil, fmt.Errorf("%w: %s: node %s: %v", errdef.ErrInvalidInput, r.Source, n.ID, err)
		}
	}
	ids, err := d.TopologicalSort()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errdef.ErrInvalidInput, r.Source, err)
	}
	order := make([]*Node, len(ids))
	for i, id := range ids {
		order[i] = byID[id]
	}
	return order, nil
}

// checkSecret refuses a Secret whose data or stringData reads schema.spec:
// an instance parameter is plain text in the Application, and Argo CD keeps
// generated manifests in plain text too.
func checkSecret(r *RGD, n *Node, e Located, refs []cel.Ref) error {
	g, k := GVK(n.Template)
	if g != "" || k != "Secret" {
		return nil
	}
	if !strings.HasPrefix(e.Path, "template.data") && !strings.HasPrefix(e.Path, "template.stringData") {
		return nil
	}
	for _, ref := range refs {
		if ref.Var == "schema" || slices.ContainsFunc(n.Iterators, func(it Iterator) bool { return it.Name == ref.Var }) {
			return fmt.Errorf("%w: %s: node %s: %s: a Secret filled from an instance parameter (${%s}): Argo CD stores parameters and generated manifests in plain text, so the secret would leak; reference an existing Secret instead",
				errdef.ErrInvalidInput, r.Source, n.ID, e.Path, errdef.Cut(e.Expr))
		}
	}
	return nil
}

// celTypeNames are CEL's type identifiers.
var celTypeNames = map[string]bool{"int": true, "uint": true, "double": true, "bool": true, "string": true, "bytes": true,
	"list": true, "map": true, "null_type": true, "type": true, "dyn": true}

// OCMGroup is the API group of OCM's controller kinds.
const OCMGroup = "delivery.ocm.software"

// IsOCMResource reports an OCM Resource (template or object).
func IsOCMResource(t map[string]any) bool {
	g, k := GVK(t)
	return g == OCMGroup && k == "Resource"
}

// GroupKind names a kind with its group ("Application.argoproj.io").
func GroupKind(g, k string) string {
	if g == "" {
		return k
	}
	return k + "." + g
}

// PlainKind: a kind emitted as it is (not interpreted: OCM, Flux sources
// and deployers, Argo CD Applications, chained kro kinds).
func PlainKind(g, k string) bool {
	switch {
	case g == OCMGroup, g == "kro.run", g == "source.toolkit.fluxcd.io",
		g == "helm.toolkit.fluxcd.io" && k == "HelmRelease", g == "kustomize.toolkit.fluxcd.io" && k == "Kustomization",
		g == "argoproj.io" && k == "Application":
		return false
	}
	return true
}
