package deployment

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/finish/localize"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/yamlfile"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/fieldpath"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// Resource types of config resources: values shipped in the component.
const (
	// TypeHelmValues is a YAML map of values.
	TypeHelmValues = "helmValues"
	// TypeConfigData is an ocm-controller v1 ConfigData document
	// (config.ocm.software/v1alpha1); "configdata.ocm.software" is accepted too.
	TypeConfigData    = "configData"
	typeConfigDataAlt = "configdata.ocm.software"
)

// IsConfigResource reports whether a resource is a config resource.
func IsConfigResource(res *ocm.Resource) bool {
	switch strings.ToLower(res.Type) {
	case strings.ToLower(TypeHelmValues), strings.ToLower(TypeConfigData), typeConfigDataAlt:
		return true
	}
	return false
}

// ConfigData is ocm-controller v1's configuration and localisation document.
type ConfigData struct {
	APIVersion    string             `json:"apiVersion"`
	Kind          string             `json:"kind"`
	Metadata      map[string]any     `json:"metadata,omitempty"`
	Configuration *Configuration     `json:"configuration,omitempty"`
	Localization  []LocalizationRule `json:"localization,omitempty"`
}

// Configuration holds the values (defaults), their schema and the rules that
// put them into files.
type Configuration struct {
	Defaults map[string]any `json:"defaults,omitempty"`
	Schema   map[string]any `json:"schema,omitempty"`
	Rules    []ConfigRule   `json:"rules,omitempty"`
}

// ConfigRule sets Path in the objects of File (a file of the rendered
// directory resource) to Value: a literal, or a spiff reference "(( name ))"
// to a value (the render's final values).
type ConfigRule struct {
	Value any    `json:"value"`
	File  string `json:"file"`
	Path  string `json:"path"`
}

// LocalizationRule puts an image resource's location into the objects of
// File at the given paths, or, without File, into the values.
type LocalizationRule struct {
	Resource ocm.Identity `json:"resource"`
	File     string       `json:"file,omitempty"`
	localize.Mapping
}

// configResource is a parsed config resource.
type configResource struct {
	res    *ocm.Resource
	values map[string]any // helmValues content or ConfigData defaults
	cd     *ConfigData    // nil for helmValues
}

func (c *configResource) describe() string {
	kind := TypeHelmValues
	if c.cd != nil {
		kind = "ConfigData"
	}
	return fmt.Sprintf("resource %s (%s)", c.res.Identity(), kind)
}

// parseConfigResource reads helmValues or ConfigData content.
func parseConfigResource(res *ocm.Resource, data []byte) (*configResource, error) {
	name := fmt.Sprintf("config resource %s", res.Identity())
	if len(data) > yamlfile.MaxDocumentSize {
		return nil, fmt.Errorf("%w: %s is %d bytes, more than the limit of %d: %w", errdef.ErrInvalidInput, name, len(data), yamlfile.MaxDocumentSize, errdef.ErrLimitExceeded)
	}
	// Values files are read as Helm reads them (sigs.k8s.io/yaml).
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %s is not YAML: %v", errdef.ErrInvalidInput, name, err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: %s is not YAML: %v", errdef.ErrInvalidInput, name, err)
	}
	if v == nil {
		v = map[string]any{}
	}
	m, ok := NormalizeNumbers(v).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: %s is not a YAML map of values", errdef.ErrInvalidInput, name)
	}
	var head struct{ APIVersion, Kind string }
	head.APIVersion, _ = m["apiVersion"].(string)
	head.Kind, _ = m["kind"].(string)
	if strings.HasPrefix(head.APIVersion, "config.ocm.software/") && head.Kind == "ConfigData" {
		if head.APIVersion != "config.ocm.software/v1alpha1" {
			return nil, fmt.Errorf("%w: %s: ConfigData %s is not supported, want config.ocm.software/v1alpha1", errdef.ErrInvalidInput, name, head.APIVersion)
		}
		var cd ConfigData
		if err := yamlfile.DecodeStrict(name, data, &cd); err != nil {
			return nil, err
		}
		c := &configResource{res: res, cd: &cd, values: map[string]any{}}
		if cd.Configuration != nil {
			cd.Configuration.Defaults, _ = NormalizeNumbers(cd.Configuration.Defaults).(map[string]any)
			cd.Configuration.Schema, _ = NormalizeNumbers(cd.Configuration.Schema).(map[string]any)
			for i := range cd.Configuration.Rules {
				r := &cd.Configuration.Rules[i]
				r.Value = NormalizeNumbers(r.Value)
				if _, err := fieldpath.Parse(r.Path); err != nil {
					return nil, fmt.Errorf("%w: %s: configuration.rules[%d].path: %v", errdef.ErrInvalidInput, name, i, err)
				}
				if r.File == "" {
					return nil, fmt.Errorf("%w: %s: configuration.rules[%d]: a rule needs a file", errdef.ErrInvalidInput, name, i)
				}
			}
			if cd.Configuration.Schema != nil {
				if err := checkLocalRefs(cd.Configuration.Schema); err != nil {
					return nil, fmt.Errorf("%w: %s: configuration.schema: %v", errdef.ErrInvalidInput, name, err)
				}
			}
			if cd.Configuration.Defaults != nil {
				c.values = cd.Configuration.Defaults
			}
		}
		for i, l := range cd.Localization {
			if l.Resource["name"] == "" {
				return nil, fmt.Errorf("%w: %s: localization[%d].resource needs a name", errdef.ErrInvalidInput, name, i)
			}
			if l.Mapping.Empty() {
				return nil, fmt.Errorf("%w: %s: localization[%d] sets nothing (give image, repository, registry, tag or digest)", errdef.ErrInvalidInput, name, i)
			}
		}
		return c, nil
	}
	return &configResource{res: res, values: m}, nil
}

var spiffRefRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\(\(\s*([A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z_][A-Za-z0-9_-]*)*)\s*\)\)$`)
})

// ruleValue resolves a ConfigData rule value: a spiff reference "(( a.b ))"
// reads the values; other spiff expressions are not supported; anything else
// is literal.
func ruleValue(v any, values map[string]any) (any, string, error) {
	s, ok := v.(string)
	if !ok {
		return v, "", nil
	}
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "((") {
		return s, "", nil
	}
	m := spiffRefRE().FindStringSubmatch(t)
	if m == nil {
		return nil, "", fmt.Errorf("spiff expression %s is not supported: only references like (( name )) are; use a deployment definition with CEL for more", errdef.Quote(s))
	}
	p := fieldpath.Key(strings.Split(m[1], ".")...)
	val, ok := fieldpath.Get(values, p)
	if !ok {
		return nil, "", fmt.Errorf("%s: the values have no %s", s, p)
	}
	return val, m[1], nil
}
