package schema

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/kubernetes-sigs/kro/pkg/simpleschema"
	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/deployment"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/explain"
)

// maxSchemaFields bounds the fields of one schema.spec.
const maxSchemaFields = 1000

// Schema is an RGD's spec.schema.
type Schema struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Group      string         `json:"group"`
	Spec       map[string]any `json:"spec"`
	Status     map[string]any `json:"status"`
	// Types are custom SimpleSchema types: name → fields, as spec's.
	Types map[string]any `json:"types"`
}

// Instance is what a schema makes of an instance: its parameters, and how
// their values become the instance spec.
type Instance struct {
	// Definition holds the parameters, typed and constrained, for package
	// config to resolve an Application's values against.
	Definition *deployment.Definition

	source string
	types  map[string]any
	// itemTypes: list or map parameters of a custom type → the type.
	itemTypes map[string]string
}

// Parameters turns schema.spec (kro's SimpleSchema) into instance
// parameters: one per leaf, named by its dotted path ("podinfo.message"),
// with kro's markers (default, required, minimum, maximum, enum, pattern,
// description) as config's constraints. source names the RGD in messages.
func (s *Schema) Parameters(source string) (*Instance, error) {
	// kro's own reading first: what kro refuses is refused, with its words.
	if _, err := simpleschema.ToOpenAPISpec(s.Spec, s.Types); err != nil {
		return nil, fmt.Errorf("%w: %s: spec.schema: %s", errdef.ErrInvalidInput, source, errdef.CutMessage(errdef.OneLine(err.Error())))
	}
	params := map[string]*deployment.Parameter{}
	f := &flattener{source: source, types: s.Types, out: params, items: map[string]string{}}
	if err := f.checkTypes(); err != nil {
		return nil, err
	}
	if err := f.flatten("", s.Spec, 0); err != nil {
		return nil, err
	}
	def, err := deployment.InstanceDefinition(source, s.Kind, params)
	if err != nil {
		return nil, err
	}
	return &Instance{Definition: def, source: source, types: s.Types, itemTypes: f.items}, nil
}

var idRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]{0,62}$`) })

// flattener turns schema.spec into parameters; a field of a custom type
// (spec.schema.types) is expanded into that type's fields, a list or map
// of a custom type is one parameter whose items are checked against it
// (items: parameter → type name).
type flattener struct {
	source string
	types  map[string]any
	out    map[string]*deployment.Parameter
	items  map[string]string
}

// maxTypes bounds spec.schema.types.
const maxTypes = 100

// checkTypes checks spec.schema.types: names of object types with fields.
func (f *flattener) checkTypes() error {
	if len(f.types) > maxTypes {
		return fmt.Errorf("%w: %s: spec.schema.types has %d types, more than %d: %w", errdef.ErrInvalidInput, f.source, len(f.types), maxTypes, errdef.ErrLimitExceeded)
	}
	for _, k := range sortedKeys(f.types) {
		if builtinType(k) || !idRE().MatchString(k) {
			return fmt.Errorf("%w: %s: spec.schema.types.%s: not a usable type name", errdef.ErrInvalidInput, f.source, errdef.Field(k))
		}
		if _, ok := f.types[k].(map[string]any); !ok {
			return fmt.Errorf("%w: %s: spec.schema.types.%s: want fields (name: \"type | markers\")", errdef.ErrInvalidInput, f.source, errdef.Field(k))
		}
	}
	return nil
}

func builtinType(t string) bool {
	switch t {
	case "string", "integer", "float", "boolean", "object":
		return true
	}
	return false
}

// customType is the custom type a field type names: T, []T or map[string]T
// (elem: the latter two).
func (f *flattener) customType(typ string) (name string, elem bool) {
	t, elem := typ, false
	if x, ok := strings.CutPrefix(t, "[]"); ok {
		t, elem = x, true
	} else if x, ok := strings.CutPrefix(t, "map[string]"); ok {
		t, elem = x, true
	}
	if _, ok := f.types[t].(map[string]any); ok && !builtinType(t) {
		return t, elem
	}
	return "", false
}

func (f *flattener) flatten(prefix string, spec map[string]any, depth int) error {
	source, out := f.source, f.out
	if depth > 16 {
		return fmt.Errorf("%w: %s: spec.schema.spec.%s is nested more than 16 levels (a custom type that contains itself?)", errdef.ErrInvalidInput, source, prefix)
	}
	for _, k := range sortedKeys(spec) {
		name := k
		if prefix != "" {
			name = prefix + "." + k
		}
		if len(out) >= maxSchemaFields {
			return fmt.Errorf("%w: %s: spec.schema.spec has more than %d fields: %w", errdef.ErrInvalidInput, source, maxSchemaFields, errdef.ErrLimitExceeded)
		}
		switch v := spec[k].(type) {
		case map[string]any:
			if err := f.flatten(name, v, depth+1); err != nil {
				return err
			}
		case string:
			typ, markers, _ := strings.Cut(v, "|")
			if t, elem := f.customType(strings.TrimSpace(typ)); t != "" {
				if !elem {
					// A field of a custom type: its fields, nested.
					if strings.TrimSpace(markers) != "" {
						return fmt.Errorf("%w: %s: spec.schema.spec.%s: markers on a field of the custom type %s are not supported (put them on the type's fields)", errdef.ErrInvalidInput, source, name, t)
					}
					if err := f.flatten(name, f.types[t].(map[string]any), depth+1); err != nil {
						return err
					}
					continue
				}
				f.items[name] = t
			}
			p, err := parseField(v)
			if err != nil {
				return fmt.Errorf("%w: %s: spec.schema.spec.%s: %v", errdef.ErrInvalidInput, source, name, err)
			}
			out[name] = p
		default:
			return fmt.Errorf("%w: %s: spec.schema.spec.%s: want a SimpleSchema type (\"string | default=x\") or nested fields, got %T", errdef.ErrInvalidInput, source, name, v)
		}
	}
	return nil
}

// checkItems checks the items of a list or map parameter of a custom type
// against the type: every field declared, of its type, required ones
// present; defaults filled in. The value is changed in place.
func (in *Instance) checkItems(name string, v any) error {
	t := in.itemTypes[name]
	fields, _ := in.types[t].(map[string]any)
	if fields == nil || v == nil {
		return nil
	}
	check := func(at string, item any) error {
		m, ok := item.(map[string]any)
		if !ok {
			return fmt.Errorf("%w: parameter %s: %s is %T, want an object of type %s", errdef.ErrInvalidInput, name, at, item, t)
		}
		return in.checkObject(name+at, t, fields, m, 0)
	}
	switch v := v.(type) {
	case []any:
		for i, x := range v {
			if err := check(fmt.Sprintf("[%d]", i), x); err != nil {
				return err
			}
		}
	case map[string]any:
		for _, k := range sortedKeys(v) {
			if err := check("."+k, v[k]); err != nil {
				return err
			}
		}
	}
	return nil
}

func (in *Instance) checkObject(at, t string, fields, m map[string]any, depth int) error {
	if depth > 16 {
		return fmt.Errorf("%w: parameter %s: nested more than 16 levels", errdef.ErrInvalidInput, at)
	}
	for k := range m {
		if _, ok := fields[k]; !ok {
			return fmt.Errorf("%w: parameter %s: field %s is not a field of type %s (%s)", errdef.ErrInvalidInput, at, errdef.Field(k), t, errdef.Cut(strings.Join(sortedKeys(fields), ", ")))
		}
	}
	for _, k := range sortedKeys(fields) {
		switch fv := fields[k].(type) {
		case map[string]any:
			sub, ok := m[k].(map[string]any)
			if !ok {
				if m[k] != nil {
					return fmt.Errorf("%w: parameter %s.%s is %T, want an object", errdef.ErrInvalidInput, at, k, m[k])
				}
				sub = map[string]any{}
				m[k] = sub
			}
			if err := in.checkObject(at+"."+k, t, fv, sub, depth+1); err != nil {
				return err
			}
		case string:
			typ, _, _ := strings.Cut(fv, "|")
			typ = strings.TrimSpace(typ)
			if sub, ok := in.types[typ].(map[string]any); ok && !builtinType(typ) {
				mm, ok := m[k].(map[string]any)
				if !ok {
					if m[k] != nil {
						return fmt.Errorf("%w: parameter %s.%s is %T, want an object of type %s", errdef.ErrInvalidInput, at, k, m[k], typ)
					}
					mm = map[string]any{}
					m[k] = mm
				}
				if err := in.checkObject(at+"."+k, typ, sub, mm, depth+1); err != nil {
					return err
				}
				continue
			}
			p, err := parseField(fv)
			if err != nil {
				return fmt.Errorf("%w: %s: spec.schema.types.%s.%s: %v", errdef.ErrInvalidInput, in.source, t, k, err)
			}
			x, ok := m[k]
			if !ok || x == nil {
				if p.Default != nil {
					m[k] = p.Default
				} else if p.Required {
					return fmt.Errorf("%w: parameter %s: field %s (type %s) is required", errdef.ErrInvalidInput, at, k, t)
				}
				continue
			}
			if !scalarOK(p.Type, x) {
				return fmt.Errorf("%w: parameter %s.%s is %v, want %s", errdef.ErrInvalidInput, at, k, x, p.Type)
			}
		}
	}
	return nil
}

func scalarOK(typ string, v any) bool {
	switch typ {
	case deployment.TypeString:
		_, ok := v.(string)
		return ok
	case "integer":
		switch x := v.(type) {
		case int, int64:
			return true
		case float64:
			return x == float64(int64(x))
		}
		return false
	case "number":
		switch v.(type) {
		case int, int64, float64:
			return true
		}
		return false
	case "boolean":
		_, ok := v.(bool)
		return ok
	}
	return true
}

// parseField reads one SimpleSchema field: "type | marker=value …".
func parseField(s string) (*deployment.Parameter, error) {
	typ, markers, _ := strings.Cut(s, "|")
	t, err := parameterType(strings.TrimSpace(typ))
	if err != nil {
		return nil, err
	}
	p := &deployment.Parameter{Type: t}
	ms, err := parseMarkers(markers)
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
		if err := setMarker(p, m); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// parameterType is the parameter type of a SimpleSchema type: lists and
// maps are arrays and objects.
func parameterType(typ string) (string, error) {
	switch {
	case typ == "string", typ == "integer", typ == "boolean", typ == "object":
		return typ, nil
	case typ == "float": // kro's; OpenAPI's number
		return deployment.TypeNumber, nil
	case strings.HasPrefix(typ, "[]"):
		return deployment.TypeArray, nil
	case strings.HasPrefix(typ, "map["):
		return deployment.TypeObject, nil
	}
	return "", fmt.Errorf("type %s is not one of string, integer, float, boolean, object, []T, map[string]T or a type of spec.schema.types", errdef.Quote(typ))
}

// setMarker sets what one marker says on p (whose Type is set).
func setMarker(p *deployment.Parameter, m marker) error {
	switch m.key {
	case "default":
		v, err := markerValue(p, m.value)
		if err != nil {
			return fmt.Errorf("default=%s: %v", errdef.Field(m.value), err)
		}
		p.Default = v
	case "required":
		b, err := strconv.ParseBool(m.value)
		if err != nil {
			return fmt.Errorf("required=%s: want true or false", errdef.Field(m.value))
		}
		p.Required = b
	case "description":
		p.Description = m.value
	case "minimum", "maximum":
		f, err := strconv.ParseFloat(m.value, 64)
		if err != nil {
			return fmt.Errorf("%s=%s: want a number", m.key, errdef.Field(m.value))
		}
		if m.key == "minimum" {
			p.Minimum = &f
		} else {
			p.Maximum = &f
		}
	case "enum":
		for _, e := range strings.Split(m.value, ",") {
			e = strings.TrimSpace(e)
			v, err := markerValue(p, e)
			if err != nil {
				return fmt.Errorf("enum value %s: %v", errdef.Field(e), err)
			}
			p.Enum = append(p.Enum, v)
		}
	case "pattern":
		p.Pattern = m.value
	case "minLength", "maxLength":
		n, err := strconv.Atoi(m.value)
		if err != nil {
			return fmt.Errorf("%s=%s: want an integer", m.key, errdef.Field(m.value))
		}
		if m.key == "minLength" {
			p.MinLength = &n
		} else {
			p.MaxLength = &n
		}
	case "immutable", "minItems", "maxItems", "uniqueItems":
		// Cluster-side checks of an instance's updates and lists: a
		// render has one instance, so nothing to check here.
	default:
		return fmt.Errorf("marker %s is not supported (default, required, description, minimum, maximum, enum, pattern, minLength, maxLength)", errdef.Quote(m.key))
	}
	return nil
}

// markerValue reads a default or enum value: as it is for a string
// parameter, else as YAML.
func markerValue(p *deployment.Parameter, s string) (any, error) {
	if p.Type == deployment.TypeString {
		return s, nil
	}
	var v any
	if err := yaml.Unmarshal([]byte(s), &v); err != nil {
		return nil, err
	}
	return v, nil
}

type marker struct{ key, value string }

// parseMarkers reads kro's markers: key=value separated by spaces; a value
// is "quoted" (Go escapes), {…} or […] (balanced), or runs to the next space.
func parseMarkers(s string) ([]marker, error) {
	var out []marker
	s = strings.TrimSpace(s)
	for s != "" {
		eq := strings.IndexByte(s, '=')
		if eq <= 0 {
			return nil, fmt.Errorf("marker %s is not key=value", errdef.Quote(s))
		}
		key := strings.TrimSpace(s[:eq])
		rest := s[eq+1:]
		var val string
		switch {
		case strings.HasPrefix(rest, `"`):
			end := 1
			for ; end < len(rest); end++ {
				if rest[end] == '\\' {
					end++
					continue
				}
				if rest[end] == '"' {
					break
				}
			}
			if end >= len(rest) {
				return nil, fmt.Errorf("marker %s: unterminated quoted value", errdef.Field(key))
			}
			u, err := strconv.Unquote(rest[:end+1])
			if err != nil {
				return nil, fmt.Errorf("marker %s: %v", errdef.Field(key), err)
			}
			val, rest = u, rest[end+1:]
		case strings.HasPrefix(rest, "{"), strings.HasPrefix(rest, "["):
			depth, end := 0, 0
			for ; end < len(rest); end++ {
				switch rest[end] {
				case '{', '[':
					depth++
				case '}', ']':
					depth--
				}
				if depth == 0 {
					break
				}
			}
			if end >= len(rest) {
				return nil, fmt.Errorf("marker %s: unbalanced value", errdef.Field(key))
			}
			val, rest = rest[:end+1], rest[end+1:]
		default:
			sp := strings.IndexAny(rest, " \t")
			if sp < 0 {
				sp = len(rest)
			}
			val, rest = rest[:sp], rest[sp:]
		}
		out = append(out, marker{key, val})
		s = strings.TrimSpace(rest)
	}
	return out, nil
}

// Spec builds schema.spec from the resolved parameters: dotted names
// become nested fields; an optional field without a default and not given
// is left out, as kro leaves it out of the instance. Items of list and map
// parameters of a custom type are checked and defaulted.
func (in *Instance) Spec(params []explain.ParamValue, given map[string]string) (map[string]any, error) {
	spec := map[string]any{}
	for _, pv := range params {
		p := in.Definition.Spec.Parameters[pv.Name]
		if _, set := given[pv.Name]; !set && p != nil && p.Default == nil {
			continue
		}
		if _, ok := in.itemTypes[pv.Name]; ok {
			if err := in.checkItems(pv.Name, pv.Value); err != nil {
				return nil, fmt.Errorf("%s: %w", in.source, err)
			}
		}
		// As the API server decodes the instance (JSON): whole numbers are
		// int64, others float64, whatever the field's type.
		pv.Value = deployment.WholeNumbers(pv.Value)
		parts := strings.Split(pv.Name, ".")
		m := spec
		for _, k := range parts[:len(parts)-1] {
			next, ok := m[k].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[k] = next
			}
			m = next
		}
		m[parts[len(parts)-1]] = pv.Value
	}
	return spec, nil
}

// Texts turns an instance spec (a chained RGD's node) into parameter
// texts, as an Application gives them.
func (in *Instance) Texts(spec map[string]any) (map[string]string, error) {
	out := map[string]string{}
	return out, flattenSpec("", spec, out, in.Definition.Spec.Parameters)
}

func flattenSpec(prefix string, v map[string]any, out map[string]string, declared map[string]*deployment.Parameter) error {
	for _, k := range sortedKeys(v) {
		name := k
		if prefix != "" {
			name = prefix + "." + k
		}
		if m, ok := v[k].(map[string]any); ok {
			if _, leaf := declared[name]; !leaf {
				if err := flattenSpec(name, m, out, declared); err != nil {
					return err
				}
				continue
			}
		}
		if s, ok := v[k].(string); ok {
			out[name] = s
			continue
		}
		b, err := yaml.Marshal(v[k])
		if err != nil {
			return err
		}
		out[name] = strings.TrimSpace(string(b))
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
