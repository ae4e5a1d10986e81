package graph

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/yamlfile"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/deployment"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/rgd/cel"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/rgd/schema"
)

// What an RGD is.
const (
	APIVersion = "kro.run/v1alpha1"
	Kind       = "ResourceGraphDefinition"
)

// Limits of one RGD: beyond them it is refused before anything is evaluated.
const (
	MaxNodes       = 500
	MaxExpressions = 20_000
)

// RGD is a decoded ResourceGraphDefinition.
type RGD struct {
	Name   string
	Source string // "ResourceGraphDefinition NAME (resource RES)", for messages
	Schema schema.Schema
	Nodes  []*Node
}

// Node is one entry of spec.resources.
type Node struct {
	ID          string         `json:"id"`
	Template    map[string]any `json:"template"`
	ExternalRef map[string]any `json:"externalRef"`
	ReadyWhen   []string       `json:"readyWhen"`
	IncludeWhen []string       `json:"includeWhen"`
	ForEach     any            `json:"forEach"`

	// Index is the node's place in spec.resources.
	Index int
	// Iterators are forEach's dimensions, in order.
	Iterators []Iterator
	// Exprs are the expressions of the template by field path (Analyze).
	Exprs []Located
	// Deps are the ids of the nodes it reads, sorted (Analyze).
	Deps []string
}

// Iterator is one dimension of forEach: a name the template reads, bound
// to each item of the list an expression over the instance spec makes.
type Iterator struct {
	Name string
	Expr string // the whole ${…} string
}

// Bounds of forEach: the objects one node expands into, and the
// dimensions of its cartesian product.
const (
	MaxForEachItems = 256
	maxIterators    = 4
)

// Located is an expression at a field path of a template
// ("template.spec.replicas").
type Located struct {
	Path string
	Expr string
}

// kro's naming rules (pkg/graph/validation.go, matched by test): node ids
// and iterators are lowerCamelCase, the kind UpperCamelCase, and neither id
// is a CEL reserved symbol nor one of kro's reserved words.
var (
	idRE   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`) })
	kindRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Z][a-zA-Z0-9]*$`) })
)

// reserved are the words no node id or iterator may be: CEL's reserved
// symbols and kro's reserved words.
var reserved = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`true false null in as break const continue else for function if import let loop package namespace return var void while
		apiVersion context dependency dependencies each externalRef externalReference externalRefs externalReferences graph instance item items kind kro
		metadata namespace object resource resourcegraphdefinition resourceGraphDefinition resources root runtime schema self serviceAccountName spec
		status this variables vars version`) {
		m[w] = true
	}
	return m
}()

type rawRGD struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Schema    schema.Schema `json:"schema"`
		Resources []*Node       `json:"resources"`
	} `json:"spec"`
}

// Decode reads an RGD document; source names it in messages.
func Decode(source string, data []byte) (*RGD, error) {
	v, err := yamlfile.ParseStrict(source, data)
	if err != nil {
		return nil, err
	}
	v = deployment.NormalizeNumbers(v)
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errdef.ErrInvalidInput, source, err)
	}
	var raw rawRGD
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("%w: %s: %s", errdef.ErrInvalidInput, source, strings.TrimPrefix(err.Error(), "json: "))
	}
	if raw.APIVersion != APIVersion || raw.Kind != Kind {
		return nil, fmt.Errorf("%w: %s: %s %s is not a %s %s", errdef.ErrInvalidInput, source, errdef.Field(raw.APIVersion), errdef.Field(raw.Kind), APIVersion, Kind)
	}
	r := &RGD{Name: raw.Metadata.Name, Source: source, Schema: raw.Spec.Schema, Nodes: raw.Spec.Resources}
	if r.Schema.Kind == "" {
		return nil, fmt.Errorf("%w: %s: spec.schema.kind is missing", errdef.ErrInvalidInput, source)
	}
	if !kindRE().MatchString(r.Schema.Kind) {
		return nil, fmt.Errorf("%w: %s: spec.schema.kind %s is not a valid kro kind name: must be UpperCamelCase", errdef.ErrInvalidInput, source, errdef.Quote(r.Schema.Kind))
	}
	if len(r.Nodes) > MaxNodes {
		return nil, fmt.Errorf("%w: %s: %d resources, more than the limit of %d: %w", errdef.ErrInvalidInput, source, len(r.Nodes), MaxNodes, errdef.ErrLimitExceeded)
	}
	seen := map[string]bool{}
	for i, n := range r.Nodes {
		if n == nil {
			return nil, fmt.Errorf("%w: %s: spec.resources[%d] is empty", errdef.ErrInvalidInput, source, i)
		}
		n.Index = i
		if !idRE().MatchString(n.ID) || reserved[n.ID] {
			return nil, fmt.Errorf("%w: %s: spec.resources[%d]: id %s is not a usable name (kro's lowerCamelCase: a lower-case letter, then letters and digits; not a CEL or kro reserved word)",
				errdef.ErrInvalidInput, source, i, errdef.Quote(n.ID))
		}
		if seen[n.ID] {
			return nil, fmt.Errorf("%w: %s: node %s is defined twice", errdef.ErrInvalidInput, source, n.ID)
		}
		seen[n.ID] = true
		if n.ExternalRef != nil {
			return nil, fmt.Errorf("%w: %s: node %s: externalRef reads an object that already exists in the cluster; a static render has no cluster to read",
				errdef.ErrInvalidInput, source, n.ID)
		}
		if n.Template == nil {
			return nil, fmt.Errorf("%w: %s: node %s has no template", errdef.ErrInvalidInput, source, n.ID)
		}
		its, err := parseForEach(n.ForEach)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: node %s: forEach: %v", errdef.ErrInvalidInput, source, n.ID, err)
		}
		n.Iterators = its
	}
	for _, n := range r.Nodes {
		for _, it := range n.Iterators {
			if seen[it.Name] {
				return nil, fmt.Errorf("%w: %s: node %s: forEach: iterator %s is also a node id", errdef.ErrInvalidInput, source, n.ID, it.Name)
			}
		}
	}
	return r, nil
}

// APIGroup of an apiVersion ("" for the core group).
func APIGroup(apiVersion string) string {
	g, _, ok := strings.Cut(apiVersion, "/")
	if !ok {
		return ""
	}
	return g
}

// GVK is the API group and kind of an object (a template or an evaluated
// one).
func GVK(obj map[string]any) (group, kind string) {
	av, _ := obj["apiVersion"].(string)
	k, _ := obj["kind"].(string)
	return APIGroup(av), k
}

// LooksLikeRGD is a cheap test before decoding a blob of unknown content.
func LooksLikeRGD(data []byte) bool {
	return bytes.Contains(data, []byte(Kind)) && bytes.Contains(data, []byte("kro.run/"))
}

// parseForEach reads kro's forEach: a list of one-key maps
// ({name: "${list expression}"}), each a dimension of the cartesian product.
func parseForEach(v any) ([]Iterator, error) {
	if v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return nil, fmt.Errorf("want a list of {name: ${expression}}")
	}
	if len(list) > maxIterators {
		return nil, fmt.Errorf("%d dimensions, more than %d: %w", len(list), maxIterators, errdef.ErrLimitExceeded)
	}
	var out []Iterator
	names := map[string]bool{}
	for i, x := range list {
		m, ok := x.(map[string]any)
		if !ok || len(m) != 1 {
			return nil, fmt.Errorf("[%d]: want one {name: ${expression}}", i)
		}
		for k, e := range m {
			s, ok := e.(string)
			if !ok || !cel.IsWholeExpression(s) {
				return nil, fmt.Errorf("[%d].%s: want one ${expression} making a list", i, errdef.Field(k))
			}
			if !idRE().MatchString(k) || reserved[k] || names[k] {
				return nil, fmt.Errorf("[%d]: iterator %s is not a usable name (lowerCamelCase, not reserved, not repeated)", i, errdef.Quote(k))
			}
			names[k] = true
			out = append(out, Iterator{Name: k, Expr: s})
		}
	}
	return out, nil
}
