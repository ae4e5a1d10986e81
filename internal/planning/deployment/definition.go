package deployment

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/finish/localize"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/yamlfile"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/deployment/ordering"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/expr"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/fieldpath"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// The deployment definition format.
const (
	APIVersion = "deploy.argocd-ocm-plugin.io/v1alpha1"
	Kind       = "ComponentDeployment"
	// ResourceType is the OCM resource type of a deployment definition shipped
	// in a component version.
	ResourceType = "deploymentDefinition"
)

// Definition is a deployment definition: how a component version deploys,
// which knobs an instance has, and how its values are computed.
type Definition struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Metadata   Metadata `json:"metadata"`
	Spec       Spec     `json:"spec"`

	// Source says where the definition was read, for messages.
	Source string `json:"-"`
	// Positions are where its fields are written in Source, by field path
	// ("spec.renders[0].kustomize.images[1]"), for --explain; empty for a
	// definition not read by Decode.
	Positions *yamlfile.Positions `json:"-"`
}

// Metadata names a definition.
type Metadata struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// Spec is the content of a definition.
type Spec struct {
	// Parameters are the instance parameters, by name.
	Parameters map[string]*Parameter `json:"parameters,omitempty"`
	// Renders are the resources to render, in output order.
	Renders []Render `json:"renders"`
	// Localization configures automatic localisation.
	Localization *Localization `json:"localization,omitempty"`
	// Jobs are imperative steps: Jobs running an image resource of the
	// component, as Argo CD hooks (after the renders in the output).
	Jobs []ordering.Job `json:"jobs,omitempty"`
}

// Parameter types.
const (
	TypeString  = "string"
	TypeInteger = "integer"
	TypeNumber  = "number"
	TypeBoolean = "boolean"
	TypeObject  = "object"
	TypeArray   = "array"
)

// Parameter declares an instance parameter.
type Parameter struct {
	Type        string `json:"type"`
	Description string `json:"description,omitempty"`
	// Default is used when the instance does not set the parameter.
	Default any `json:"default,omitempty"`
	// Required parameters must be set by the instance (a default is not allowed).
	Required bool `json:"required,omitempty"`
	// Enum restricts the value to a list.
	Enum []any `json:"enum,omitempty"`
	// Pattern is a regular expression (RE2) a string must match.
	Pattern string `json:"pattern,omitempty"`
	// Minimum and Maximum bound numbers (inclusive).
	Minimum *float64 `json:"minimum,omitempty"`
	Maximum *float64 `json:"maximum,omitempty"`
	// MinLength and MaxLength bound strings (in characters) and arrays (items).
	MinLength *int `json:"minLength,omitempty"`
	MaxLength *int `json:"maxLength,omitempty"`
	// Schema is a JSON schema objects and arrays must satisfy (local $refs only).
	Schema map[string]any `json:"schema,omitempty"`
	// Secret parameters take only a reference to an existing Secret,
	// {secretName, key}, never a value: Argo CD stores generated manifests in
	// plain text.
	Secret bool `json:"secret,omitempty"`

	pattern *regexp.Regexp
}

// Render is one resource to render.
type Render struct {
	// Name identifies the render in messages and reports; default the resource name.
	Name string `json:"name,omitempty"`
	// Resource is the identity of a helmChart or directoryTree resource (name
	// and extra identity).
	Resource ocm.Identity `json:"resource"`
	// When is a CEL condition; the render is skipped when it is false.
	When string `json:"when,omitempty"`
	// ReleaseName, Namespace and Path (entry path inside a directory resource)
	// may hold ${…}; empty means the request's.
	ReleaseName string `json:"releaseName,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	Path        string `json:"path,omitempty"`
	// ValuesFrom are config resources of the component (helmValues or
	// ocm-controller ConfigData), layered in order; omitted means every config
	// resource of the component, an empty list none.
	ValuesFrom []ValuesFrom `json:"valuesFrom,omitempty"`
	// Values are layered over the config resources; any string may hold ${…}.
	Values map[string]any `json:"values,omitempty"`
	// Localization maps image resources into the values.
	Localization []ImageMapping `json:"localization,omitempty"`
	// Patches set fields of the rendered objects.
	Patches []Patch `json:"patches,omitempty"`
	// Kustomize is an overlay kustomize builds over a directoryTree's
	// kustomization, in kustomize's spelling (see overlay.Spec); any
	// string may hold ${…}.
	Kustomize map[string]any `json:"kustomize,omitempty"`
	// SyncWave places the render's objects in an Argo CD sync wave: an
	// integer, or a string holding ${…} that evaluates to one. Objects with
	// a wave of their own, Namespaces and CRDs keep theirs (see package hooks).
	SyncWave any `json:"syncWave,omitempty"`
	// Hook makes the render's objects Argo CD resource hooks (objects that
	// are hooks already, Namespaces and CRDs excepted).
	Hook *ordering.Hook `json:"hook,omitempty"`
	// Ordering places individual objects of the render, overwriting what
	// they carry.
	Ordering []ordering.OrderingRule `json:"ordering,omitempty"`
}

// ValuesFrom names a config resource.
type ValuesFrom struct {
	Resource ocm.Identity `json:"resource"`
}

// ImageMapping puts an image resource's location into values (the OCM CLI's
// image mapping).
type ImageMapping struct {
	Resource ocm.Identity `json:"resource"`
	localize.Mapping
}

// Patch sets one field in the rendered objects a target selects.
type Patch struct {
	Target ordering.Target `json:"target"`
	// Path of the field (see package fieldpath); [-] appends to a list.
	Path string `json:"path"`
	// Value may hold ${…}; the render's final values are available as `values`.
	Value any `json:"value"`
}

// Localization configures automatic localisation.
type Localization struct {
	// Automatic rewrites workload images after rendering (see package localize)
	// and applies the localization-hint labels of image resources to the values.
	Automatic bool `json:"automatic,omitempty"`
	// RequireAll fails when an image matches no image resource of the component.
	RequireAll bool `json:"requireAll,omitempty"`
}

var paramNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// Decode reads a deployment definition strictly: unknown fields, duplicate
// keys and values of the wrong kind are errors naming the field path, and
// the definition is validated (see Validate). source names it in messages.
func Decode(source string, data []byte) (*Definition, error) {
	var d Definition
	pos, err := yamlfile.DecodeStrictPositions(source, data, &d)
	if err != nil {
		return nil, err
	}
	d.Source, d.Positions = source, pos
	d.NormalizeNumbers()
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return &d, nil
}

// normalize turns the json.Numbers of free-form fields into int64 or float64.
func (d *Definition) NormalizeNumbers() {
	for _, p := range d.Spec.Parameters {
		if p == nil {
			continue
		}
		p.Default = NormalizeNumbers(p.Default)
		for i := range p.Enum {
			p.Enum[i] = NormalizeNumbers(p.Enum[i])
		}
		p.Schema, _ = NormalizeNumbers(p.Schema).(map[string]any)
	}
	for i := range d.Spec.Renders {
		r := &d.Spec.Renders[i]
		r.Values, _ = NormalizeNumbers(r.Values).(map[string]any)
		for j := range r.Patches {
			r.Patches[j].Value = NormalizeNumbers(r.Patches[j].Value)
		}
		r.SyncWave = NormalizeNumbers(r.SyncWave)
		for j := range r.Ordering {
			r.Ordering[j].SyncWave = NormalizeNumbers(r.Ordering[j].SyncWave)
		}
	}
	for i := range d.Spec.Jobs {
		d.Spec.Jobs[i].SyncWave = NormalizeNumbers(d.Spec.Jobs[i].SyncWave)
	}
}

// NormalizeNumbers converts json.Number to int64 where it fits, else
// float64, recursively, in place (what decoding with UseNumber leaves).
func NormalizeNumbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		f, _ := v.Float64()
		return f
	case map[string]any:
		if v == nil {
			return v
		}
		for k, e := range v {
			v[k] = NormalizeNumbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = NormalizeNumbers(e)
		}
	}
	return v
}

// WholeNumbers makes whole float64s (and ints) int64, recursively, in
// place: numbers decoded without UseNumber read as a JSON decoder that
// keeps integers reads them (the API server's; what expressions expect).
// A float64 outside int64's range stays as it is.
func WholeNumbers(v any) any {
	switch v := v.(type) {
	case float64:
		if v == math.Trunc(v) && v >= math.MinInt64 && v < math.MaxInt64 {
			return int64(v)
		}
	case int:
		return int64(v)
	case map[string]any:
		for k, e := range v {
			v[k] = WholeNumbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = WholeNumbers(e)
		}
	}
	return v
}

// Validate checks what decoding alone cannot: kind and version, parameter
// declarations, unique render names, resource identities, paths, and that
// every ${…} expression compiles.
func (d *Definition) Validate() error {
	fail := d.failure()
	if d.APIVersion != APIVersion {
		return fail("apiVersion", "%s is not supported, want %s", errdef.Quote(d.APIVersion), APIVersion)
	}
	if d.Kind != Kind {
		return fail("kind", "%s, want %s", errdef.Quote(d.Kind), Kind)
	}
	if err := d.validateParameters(fail); err != nil {
		return err
	}
	if len(d.Spec.Renders) == 0 {
		return fail("spec.renders", "no renders: name at least one resource to render")
	}
	seen := map[string]bool{}
	for i := range d.Spec.Renders {
		if err := validateRender(fmt.Sprintf("spec.renders[%d]", i), &d.Spec.Renders[i], seen, fail); err != nil {
			return err
		}
	}
	renders := map[string]bool{}
	for _, r := range d.Spec.Renders {
		renders[r.Name] = true
	}
	if err := ordering.ValidateJobs(d.Spec.Jobs, renders, fail); err != nil {
		return err
	}
	return d.checkExpressions()
}

// failure makes Validate's errors: invalid input at a path of the
// definition, named by its source.
func (d *Definition) failure() ordering.Fail {
	return func(path, format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s: %s", errdef.ErrInvalidInput, d.Source, path, fmt.Sprintf(format, args...))
	}
}

// validateParameters checks the parameter declarations, in name order.
func (d *Definition) validateParameters(fail ordering.Fail) error {
	for _, name := range sortedKeys(d.Spec.Parameters) {
		p := d.Spec.Parameters[name]
		where := fieldpath.Key("spec", "parameters", name).String()
		if !paramNameRE().MatchString(name) {
			return fail(where, "parameter names are letters, digits and _ (not starting with a digit), to be usable in CEL")
		}
		if p == nil {
			return fail(where, "empty parameter declaration (want at least a type)")
		}
		if err := p.validate(); err != nil {
			return fail(where, "%v", err)
		}
	}
	return nil
}

// validateRender checks one render (at where) and names it after its
// resource when it has no name; seen holds the names of the renders before.
func validateRender(where string, r *Render, seen map[string]bool, fail ordering.Fail) error {
	if r.Resource["name"] == "" {
		return fail(where+".resource", "the resource identity needs a name")
	}
	if r.Name == "" {
		r.Name = r.Resource["name"]
	}
	if seen[r.Name] {
		return fail(where+".name", "render %s is defined twice (names default to the resource name)", errdef.Quote(r.Name))
	}
	seen[r.Name] = true
	for j, v := range r.ValuesFrom {
		if v.Resource["name"] == "" {
			return fail(fmt.Sprintf("%s.valuesFrom[%d].resource", where, j), "the resource identity needs a name")
		}
	}
	if err := validateLocalization(where, r, fail); err != nil {
		return err
	}
	if err := validatePatches(where, r, fail); err != nil {
		return err
	}
	return ordering.ValidateRender(where, r.SyncWave, r.Hook, r.Ordering, fail)
}

// validateLocalization checks a render's localization mappings: each names
// a resource, sets something, and its field paths parse.
func validateLocalization(where string, r *Render, fail ordering.Fail) error {
	for j, m := range r.Localization {
		w := fmt.Sprintf("%s.localization[%d]", where, j)
		if m.Resource["name"] == "" {
			return fail(w+".resource", "the resource identity needs a name")
		}
		if m.Mapping.Empty() {
			return fail(w, "the mapping sets nothing: give at least one of image, repository, registry, tag, digest")
		}
		for _, p := range []string{m.Image, m.Repository, m.Registry, m.Tag, m.Digest} {
			if p == "" {
				continue
			}
			if _, err := fieldpath.Parse(p); err != nil {
				return fail(w, "%v", err)
			}
		}
	}
	return nil
}

// validatePatches checks a render's patches: a target kind and a path.
func validatePatches(where string, r *Render, fail ordering.Fail) error {
	for j, p := range r.Patches {
		w := fmt.Sprintf("%s.patches[%d]", where, j)
		if p.Target.Kind == "" {
			return fail(w+".target.kind", "a patch target needs a kind")
		}
		if _, err := fieldpath.Parse(p.Path); err != nil {
			return fail(w+".path", "%v", err)
		}
	}
	return nil
}

func (p *Parameter) validate() error {
	switch p.Type {
	case TypeString, TypeInteger, TypeNumber, TypeBoolean, TypeObject, TypeArray:
	case "":
		if !p.Secret {
			return fmt.Errorf("type is missing (string, integer, number, boolean, object or array)")
		}
		p.Type = TypeObject
	default:
		return fmt.Errorf("type %s is not one of string, integer, number, boolean, object, array", errdef.Quote(p.Type))
	}
	if p.Secret && p.Type != TypeObject {
		return fmt.Errorf("a secret parameter takes a reference {secretName, key}: its type is object, not %s", p.Type)
	}
	if p.Required && p.Default != nil {
		return fmt.Errorf("required and default exclude each other")
	}
	if p.Pattern != "" {
		if p.Type != TypeString {
			return fmt.Errorf("pattern applies to strings, not %s", p.Type)
		}
		re, err := regexp.Compile(p.Pattern)
		if err != nil {
			// The parser's error repeats the expression in full.
			if se := (*syntax.Error)(nil); errors.As(err, &se) {
				return fmt.Errorf("pattern %s: %s at %s", errdef.Quote(p.Pattern), se.Code, errdef.Quote(se.Expr))
			}
			return fmt.Errorf("pattern %s: %s", errdef.Quote(p.Pattern), errdef.Cut(err.Error()))
		}
		p.pattern = re
	}
	if (p.Minimum != nil || p.Maximum != nil) && p.Type != TypeInteger && p.Type != TypeNumber {
		return fmt.Errorf("minimum and maximum apply to numbers, not %s", p.Type)
	}
	if p.Minimum != nil && p.Maximum != nil && *p.Minimum > *p.Maximum {
		return fmt.Errorf("minimum %v is greater than maximum %v", *p.Minimum, *p.Maximum)
	}
	if (p.MinLength != nil || p.MaxLength != nil) && p.Type != TypeString && p.Type != TypeArray {
		return fmt.Errorf("minLength and maxLength apply to strings and arrays, not %s", p.Type)
	}
	if p.Schema != nil {
		if p.Type != TypeObject && p.Type != TypeArray {
			return fmt.Errorf("schema applies to objects and arrays, not %s", p.Type)
		}
		if err := checkLocalRefs(p.Schema); err != nil {
			return fmt.Errorf("schema: %v", err)
		}
	}
	for i, e := range p.Enum {
		v, err := p.coerce(e)
		if err != nil {
			return fmt.Errorf("enum[%d]: %v", i, err)
		}
		p.Enum[i] = v
	}
	if p.Default != nil {
		v, err := p.coerce(p.Default)
		if err != nil {
			return fmt.Errorf("default: %v", err)
		}
		if p.Secret {
			if err := checkSecretRef(v); err != nil {
				return fmt.Errorf("default: %v", err)
			}
		} else if err := p.check(v); err != nil {
			return fmt.Errorf("default: %v", err)
		}
		p.Default = v
	}
	return nil
}

// coerce converts a decoded value to the parameter's type (integers that
// arrive as floats become int64) or fails.
func (p *Parameter) coerce(v any) (any, error) {
	switch p.Type {
	case TypeString:
		if s, ok := v.(string); ok {
			return s, nil
		}
	case TypeInteger:
		switch n := v.(type) {
		case int64:
			return n, nil
		case int:
			return int64(n), nil
		case float64:
			if n == math.Trunc(n) && math.Abs(n) < 1<<53 {
				return int64(n), nil
			}
		}
	case TypeNumber:
		switch n := v.(type) {
		case int64:
			return float64(n), nil
		case int:
			return float64(n), nil
		case float64:
			return n, nil
		}
	case TypeBoolean:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case TypeObject:
		if m, ok := v.(map[string]any); ok {
			return m, nil
		}
	case TypeArray:
		if l, ok := v.([]any); ok {
			return l, nil
		}
	}
	return nil, fmt.Errorf("want %s %s, got %s", article(p.Type), p.Type, expr.DescribeValue(v))
}

func article(t string) string {
	if strings.IndexByte("aeiou", t[0]) >= 0 {
		return "an"
	}
	return "a"
}

// check validates a value of the parameter's type against its constraints.
func (p *Parameter) check(v any) error {
	if len(p.Enum) > 0 {
		ok := false
		for _, e := range p.Enum {
			if equalValues(e, v) {
				ok = true
				break
			}
		}
		if !ok {
			allowed := make([]string, len(p.Enum))
			for i, e := range p.Enum {
				b, _ := json.Marshal(e)
				allowed[i] = string(b)
			}
			b, _ := json.Marshal(v)
			return fmt.Errorf("%s is not one of %s", errdef.Field(string(b)), errdef.Cut(strings.Join(allowed, ", ")))
		}
	}
	switch v := v.(type) {
	case string:
		n := len([]rune(v))
		if p.MinLength != nil && n < *p.MinLength {
			return fmt.Errorf("%s is shorter than %d characters", errdef.Quote(v), *p.MinLength)
		}
		if p.MaxLength != nil && n > *p.MaxLength {
			return fmt.Errorf("%s is longer than %d characters", errdef.Quote(v), *p.MaxLength)
		}
		if p.pattern != nil && !p.pattern.MatchString(v) {
			return fmt.Errorf("%s does not match the pattern %s", errdef.Quote(v), errdef.Quote(p.Pattern))
		}
	case int64:
		if err := p.bounds(float64(v)); err != nil {
			return err
		}
	case float64:
		if err := p.bounds(v); err != nil {
			return err
		}
	case []any:
		if p.MinLength != nil && len(v) < *p.MinLength {
			return fmt.Errorf("the list has %d items, fewer than %d", len(v), *p.MinLength)
		}
		if p.MaxLength != nil && len(v) > *p.MaxLength {
			return fmt.Errorf("the list has %d items, more than %d", len(v), *p.MaxLength)
		}
	}
	if p.Schema != nil {
		if err := validateSchema(v, p.Schema); err != nil {
			return err
		}
	}
	return nil
}

func (p *Parameter) bounds(f float64) error {
	if p.Minimum != nil && f < *p.Minimum {
		return fmt.Errorf("%v is less than the minimum %v", f, *p.Minimum)
	}
	if p.Maximum != nil && f > *p.Maximum {
		return fmt.Errorf("%v is greater than the maximum %v", f, *p.Maximum)
	}
	return nil
}

func equalValues(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}
