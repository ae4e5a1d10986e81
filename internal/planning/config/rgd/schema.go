package rgd

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/config"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/config/explain"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/errdef"
)

// maxSchemaFields bounds the fields of one schema.spec.
const maxSchemaFields = 1000

// Parameters turns schema.spec (kro's SimpleSchema) into instance
// parameters: one per leaf, named by its dotted path ("podinfo.message"),
// with kro's markers (default, required, minimum, maximum, enum, pattern,
// description) as config's constraints.
func (r *RGD) Parameters() (*config.Definition, error) {
	params := map[string]*config.Parameter{}
	if err := flatten(r.Source, "", r.Schema.Spec, params, 0); err != nil {
		return nil, err
	}
	return config.InstanceDefinition(r.Source, r.Schema.Kind, params)
}

func flatten(source, prefix string, spec map[string]any, out map[string]*config.Parameter, depth int) error {
	if depth > 16 {
		return fmt.Errorf("%w: %s: spec.schema.spec.%s is nested more than 16 levels", errdef.ErrInvalidInput, source, prefix)
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
			if err := flatten(source, name, v, out, depth+1); err != nil {
				return err
			}
		case string:
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

// parseField reads one SimpleSchema field: "type | marker=value …".
func parseField(s string) (*config.Parameter, error) {
	typ, markers, _ := strings.Cut(s, "|")
	typ = strings.TrimSpace(typ)
	p := &config.Parameter{}
	switch {
	case typ == "string", typ == "integer", typ == "number", typ == "boolean", typ == "object":
		p.Type = typ
	case strings.HasPrefix(typ, "[]"):
		p.Type = config.TypeArray
	case strings.HasPrefix(typ, "map["):
		p.Type = config.TypeObject
	default:
		return nil, fmt.Errorf("type %q is not one of string, integer, number, boolean, object, []T, map[string]T (custom types are not supported)", errdef.Truncate(typ, 40))
	}
	ms, err := parseMarkers(markers)
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
		switch m.key {
		case "default":
			if p.Type == config.TypeString {
				p.Default = m.value
				continue
			}
			var v any
			if err := yaml.Unmarshal([]byte(m.value), &v); err != nil {
				return nil, fmt.Errorf("default=%s: %v", errdef.Truncate(m.value, 60), err)
			}
			p.Default = v
		case "required":
			b, err := strconv.ParseBool(m.value)
			if err != nil {
				return nil, fmt.Errorf("required=%s: want true or false", errdef.Truncate(m.value, 20))
			}
			p.Required = b
		case "description":
			p.Description = m.value
		case "minimum", "maximum":
			f, err := strconv.ParseFloat(m.value, 64)
			if err != nil {
				return nil, fmt.Errorf("%s=%s: want a number", m.key, errdef.Truncate(m.value, 20))
			}
			if m.key == "minimum" {
				p.Minimum = &f
			} else {
				p.Maximum = &f
			}
		case "enum":
			for _, e := range strings.Split(m.value, ",") {
				e = strings.TrimSpace(e)
				if p.Type == config.TypeString {
					p.Enum = append(p.Enum, e)
					continue
				}
				var v any
				if err := yaml.Unmarshal([]byte(e), &v); err != nil {
					return nil, fmt.Errorf("enum value %s: %v", errdef.Truncate(e, 40), err)
				}
				p.Enum = append(p.Enum, v)
			}
		case "pattern":
			p.Pattern = m.value
		case "minLength", "maxLength":
			n, err := strconv.Atoi(m.value)
			if err != nil {
				return nil, fmt.Errorf("%s=%s: want an integer", m.key, errdef.Truncate(m.value, 20))
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
			return nil, fmt.Errorf("marker %q is not supported (default, required, description, minimum, maximum, enum, pattern, minLength, maxLength)", errdef.Truncate(m.key, 40))
		}
	}
	return p, nil
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
			return nil, fmt.Errorf("marker %q is not key=value", errdef.Truncate(s, 40))
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
				return nil, fmt.Errorf("marker %s: unterminated quoted value", errdef.Truncate(key, 40))
			}
			u, err := strconv.Unquote(rest[:end+1])
			if err != nil {
				return nil, fmt.Errorf("marker %s: %v", errdef.Truncate(key, 40), err)
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
				return nil, fmt.Errorf("marker %s: unbalanced value", errdef.Truncate(key, 40))
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

// instanceSpec builds schema.spec from the resolved parameters: dotted
// names become nested fields; an optional field without a default and not
// given is left out, as kro leaves it out of the instance.
func instanceSpec(def *config.Definition, params []explain.ParamValue, given map[string]string) map[string]any {
	spec := map[string]any{}
	for _, pv := range params {
		p := def.Spec.Parameters[pv.Name]
		if _, set := given[pv.Name]; !set && p != nil && p.Default == nil {
			continue
		}
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
	return spec
}

// flattenSpec turns an instance spec (a chained RGD's node) into parameter
// texts, as an Application gives them.
func flattenSpec(prefix string, v map[string]any, out map[string]string, declared map[string]*config.Parameter) error {
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
