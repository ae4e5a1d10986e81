package docs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/deployment"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/platform"
)

// Validator checks YAML blocks (see the package documentation).
type Validator struct {
	definitionSchema *jsonschema.Schema
	argo             map[string]*jsonschema.Schema // by kind
}

// NewValidator loads the published deployment definition schema and Argo
// CD's CRDs from the repository at root.
func NewValidator(root string) (*Validator, error) {
	v := &Validator{argo: map[string]*jsonschema.Schema{}}
	b, err := os.ReadFile(filepath.Join(root, "docs", "schema", "componentdeployment-v1alpha1.schema.json"))
	if err != nil {
		return nil, err
	}
	if v.definitionSchema, err = compile("componentdeployment.json", b); err != nil {
		return nil, err
	}
	// Argo CD's install.yaml is not committed: make argocd-manifests writes
	// it from the Go module cache.
	installs, _ := filepath.Glob(filepath.Join(root, "manifests", "argocd", "argo-cd-*", "install.yaml"))
	if len(installs) != 1 {
		return nil, fmt.Errorf("want one Argo CD install.yaml in manifests/argocd/argo-cd-*/, found %d: run make argocd-manifests", len(installs))
	}
	b, err = os.ReadFile(installs[0])
	if err != nil {
		return nil, err
	}
	dec := yamlv3.NewDecoder(bytes.NewReader(b))
	for {
		var crd struct {
			Kind string `yaml:"kind"`
			Spec struct {
				Group string `yaml:"group"`
				Names struct {
					Kind string `yaml:"kind"`
				} `yaml:"names"`
				Versions []struct {
					Name   string `yaml:"name"`
					Schema struct {
						OpenAPIV3Schema map[string]any `yaml:"openAPIV3Schema"`
					} `yaml:"schema"`
				} `yaml:"versions"`
			} `yaml:"spec"`
		}
		if err := dec.Decode(&crd); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", installs[0], err)
		}
		if crd.Kind != "CustomResourceDefinition" || crd.Spec.Group != "argoproj.io" {
			continue
		}
		for _, ver := range crd.Spec.Versions {
			if ver.Name != "v1alpha1" || ver.Schema.OpenAPIV3Schema == nil {
				continue
			}
			s := strictSchema(ver.Schema.OpenAPIV3Schema, true)
			j, err := yaml.Marshal(s)
			if err != nil {
				return nil, err
			}
			j, err = yaml.YAMLToJSON(j)
			if err != nil {
				return nil, err
			}
			if v.argo[crd.Spec.Names.Kind], err = compile(crd.Spec.Names.Kind+".json", j); err != nil {
				return nil, fmt.Errorf("CRD %s: %w", crd.Spec.Names.Kind, err)
			}
		}
	}
	for _, k := range []string{"Application", "ApplicationSet", "AppProject"} {
		if v.argo[k] == nil {
			return nil, fmt.Errorf("%s: no v1alpha1 CRD of %s", installs[0], k)
		}
	}
	return v, nil
}

func compile(name string, schemaJSON []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(name, doc); err != nil {
		return nil, err
	}
	return c.Compile(name)
}

// strictSchema turns a CRD's structural schema into a JSON schema that
// refuses unknown fields, as the API server's strict field validation (and
// kubectl's default --validate=strict) does: every object with properties
// and no additionalProperties or x-kubernetes-preserve-unknown-fields gets
// additionalProperties: false. The root's metadata (type: object only in a
// CRD) must have a name.
func strictSchema(s map[string]any, root bool) map[string]any {
	out := make(map[string]any, len(s)+1)
	for k, v := range s {
		switch v := v.(type) {
		case map[string]any:
			if k == "properties" {
				props := make(map[string]any, len(v))
				for name, p := range v {
					if pm, ok := p.(map[string]any); ok {
						props[name] = strictSchema(pm, false)
					} else {
						props[name] = p
					}
				}
				out[k] = props
			} else {
				out[k] = strictSchema(v, false)
			}
		case []any:
			items := make([]any, len(v))
			for i, it := range v {
				if m, ok := it.(map[string]any); ok {
					items[i] = strictSchema(m, false)
				} else {
					items[i] = it
				}
			}
			out[k] = items
		default:
			out[k] = v
		}
	}
	_, hasProps := s["properties"]
	_, hasAdditional := s["additionalProperties"]
	if hasProps && !hasAdditional && s["x-kubernetes-preserve-unknown-fields"] != true {
		out["additionalProperties"] = false
	}
	if root {
		props, _ := out["properties"].(map[string]any)
		if props != nil {
			props["metadata"] = map[string]any{
				"type": "object", "required": []any{"name"},
				"properties": map[string]any{"name": map[string]any{"type": "string", "minLength": 1}},
			}
		}
	}
	return out
}

// Validate checks one YAML block; it returns one error per problem.
func (v *Validator) Validate(b Block) []error {
	var errs []error
	fail := func(err error) { errs = append(errs, fmt.Errorf("%s: %w", b, err)) }
	docs, err := splitYAML(b.Text)
	if err != nil {
		return []error{fmt.Errorf("%s: not YAML: %w", b, err)}
	}
	for _, doc := range docs {
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			fail(fmt.Errorf("not a YAML map: %w", err))
			continue
		}
		switch b.Marker {
		case Fragment:
			continue
		case PlatformConfig:
			if _, err := platform.DecodeConfig(doc); err != nil {
				fail(err)
			}
			continue
		case DefinitionSpec:
			full, err := yaml.Marshal(map[string]any{"apiVersion": "deploy.argocd-ocm-plugin.io/v1alpha1", "kind": "ComponentDeployment",
				"metadata": map[string]any{"name": "docs"}, "spec": m})
			if err != nil {
				fail(err)
				continue
			}
			errs = append(errs, v.definition(b, full)...)
			continue
		}
		apiVersion, _ := m["apiVersion"].(string)
		kind, _ := m["kind"].(string)
		switch {
		case apiVersion == "" || kind == "":
			fail(fmt.Errorf("a YAML block without apiVersion and kind: mark what it is (<!-- docs-test: %s|%s|%s REASON -->)", DefinitionSpec, PlatformConfig, Fragment))
		case kind == "ComponentDeployment":
			errs = append(errs, v.definition(b, doc)...)
		case strings.HasPrefix(apiVersion, "argoproj.io/"):
			s := v.argo[kind]
			if s == nil || apiVersion != "argoproj.io/v1alpha1" {
				fail(fmt.Errorf("%s %s is no Argo CD CRD of the vendored install", apiVersion, kind))
				continue
			}
			if err := validateJSON(s, doc); err != nil {
				fail(fmt.Errorf("%s %v against Argo CD's CRD: %w", kind, m["metadata"], err))
			}
		}
	}
	return errs
}

func (v *Validator) definition(b Block, doc []byte) []error {
	var errs []error
	if _, err := deployment.Decode(b.String(), doc); err != nil {
		errs = append(errs, fmt.Errorf("%s: the plugin refuses this deployment definition: %w", b, err))
	}
	if err := validateJSON(v.definitionSchema, doc); err != nil {
		errs = append(errs, fmt.Errorf("%s: against docs/schema: %w", b, err))
	}
	return errs
}

func validateJSON(s *jsonschema.Schema, doc []byte) error {
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		return err
	}
	if err := s.Validate(inst); err != nil {
		return errors.New(strings.Join(strings.Fields(err.Error()), " "))
	}
	return nil
}

// splitYAML parses text as YAML 1.2 (as the plugin does) and returns each
// document re-encoded; a syntax error names its line in the block.
func splitYAML(text string) ([][]byte, error) {
	dec := yamlv3.NewDecoder(strings.NewReader(text))
	var out [][]byte
	for {
		var n yamlv3.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		b, err := yamlv3.Marshal(&n)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	if len(out) == 0 {
		return nil, errors.New("empty")
	}
	return out, nil
}
