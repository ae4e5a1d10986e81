package deployment

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	commonutil "helm.sh/helm/v4/pkg/chart/common/util"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/yamlfile"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/explain"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
)

// Where a parameter's value came from.
const (
	FromInstance = "instance" // the Application's parameters, or --param
	FromDefault  = "default"
)

var (
	secretNameRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	})
	secretKeyRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[-._a-zA-Z0-9]+$`) })
)

// secretHint explains, without echoing anything the user passed, what a
// secret parameter accepts.
const secretHint = "it takes a reference to an existing Secret, {secretName: NAME, key: KEY}, never the secret value itself: " +
	"Argo CD stores the generated manifests in plain text (in its cache and in the UI), so a value would leak"

// checkSecretRef accepts exactly {secretName, key}. Its errors never include
// the value.
func checkSecretRef(v any) error {
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("not a Secret reference: %s", secretHint)
	}
	for k := range m {
		if k != "secretName" && k != "key" {
			return fmt.Errorf("a Secret reference has only the fields secretName and key, not %s: %s", errdef.Quote(k), secretHint)
		}
	}
	name, _ := m["secretName"].(string)
	key, _ := m["key"].(string)
	if name == "" || key == "" {
		return fmt.Errorf("a Secret reference needs both secretName and key: %s", secretHint)
	}
	if len(name) > 253 || !secretNameRE().MatchString(name) {
		return fmt.Errorf("secretName is not a valid Secret name (lower-case DNS subdomain): %s", secretHint)
	}
	if len(key) > 253 || !secretKeyRE().MatchString(key) {
		return fmt.Errorf("key is not a valid Secret data key (letters, digits, '-', '_', '.'): %s", secretHint)
	}
	return nil
}

// parseText reads an instance parameter given as text (Argo CD parameters
// and --param are strings) as the declared type.
func (p *Parameter) parseText(s string) (any, error) {
	switch p.Type {
	case TypeString:
		return s, nil
	case TypeInteger:
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("want an integer, got %s", errdef.Quote(s))
		}
		return n, nil
	case TypeNumber:
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return nil, fmt.Errorf("want a number, got %s", errdef.Quote(s))
		}
		return f, nil
	case TypeBoolean:
		switch strings.TrimSpace(s) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, fmt.Errorf("want true or false, got %s", errdef.Quote(s))
	default: // object, array: YAML (JSON is YAML)
		v, err := parseYAMLValue(s)
		switch {
		case errors.Is(err, errdef.ErrLimitExceeded):
			return nil, err // a bound (size, nesting): names no content
		case err != nil && p.Secret:
			return nil, fmt.Errorf("not a YAML map")
		case err != nil:
			return nil, fmt.Errorf("not YAML: %v", err)
		}
		return p.coerce(v)
	}
}

// parseYAMLValue reads a YAML 1.2 (or JSON) value: only true and false are
// booleans, integers become int64, other numbers float64.
func parseYAMLValue(s string) (any, error) {
	v, err := yamlfile.ParseStrict("value", []byte(s))
	if err != nil {
		return nil, err
	}
	return NormalizeNumbers(v), nil
}

// ResolveParameters types, defaults and validates the instance parameters
// given as text against the definition. Unknown names, missing required
// parameters, values of the wrong type, failed constraints and literal values
// for secret parameters are errors naming the parameter; the errors of a
// secret parameter never include what was passed.
func (d *Definition) ResolveParameters(given map[string]string) ([]explain.ParamValue, error) {
	fail := func(name, format string, args ...any) error {
		return fmt.Errorf("%w: %s: parameter %s: %s", errdef.ErrInvalidInput, d.Source, name, fmt.Sprintf(format, args...))
	}
	for _, name := range sortedKeys(given) {
		if _, ok := d.Spec.Parameters[name]; !ok {
			declared := sortedKeys(d.Spec.Parameters)
			if len(declared) == 0 {
				return nil, fail(name, "the deployment definition declares no parameters")
			}
			return nil, fail(name, "not declared (declared: %s)", errdef.Cut(strings.Join(declared, ", ")))
		}
	}
	var out []explain.ParamValue
	for _, name := range sortedKeys(d.Spec.Parameters) {
		p := d.Spec.Parameters[name]
		pv := explain.ParamValue{Name: name, Type: p.Type, Secret: p.Secret}
		text, ok := given[name]
		switch {
		case ok:
			v, err := p.parseText(text)
			if err != nil {
				if p.Secret {
					return nil, fail(name, "is secret: %s", secretHint)
				}
				if errors.Is(err, errdef.ErrLimitExceeded) {
					return nil, fmt.Errorf("%s: parameter %s: %w", d.Source, name, err) // err is invalid input
				}
				return nil, fail(name, "%v", err)
			}
			pv.Value, pv.From = v, FromInstance
		case p.Default != nil:
			pv.Value, pv.From = manifests.DeepCopy(p.Default), FromDefault
		case p.Required:
			desc := ""
			if p.Description != "" {
				desc = " (" + p.Description + ")"
			}
			return nil, fail(name, "is required%s but not set", desc)
		case p.Secret:
			pv.Value, pv.From = nil, FromDefault // unset: no reference
		default:
			pv.Value, pv.From = zeroValue(p.Type), FromDefault
		}
		if p.Secret {
			if pv.Value == nil {
				out = append(out, pv)
				continue
			}
			if err := checkSecretRef(pv.Value); err != nil {
				return nil, fail(name, "is secret: %v", err)
			}
		} else if err := p.check(pv.Value); err != nil {
			return nil, fail(name, "%v", err)
		}
		out = append(out, pv)
	}
	return out, nil
}

// zeroValue is what an unset optional parameter without a default holds.
func zeroValue(t string) any {
	switch t {
	case TypeString:
		return ""
	case TypeInteger:
		return int64(0)
	case TypeNumber:
		return float64(0)
	case TypeBoolean:
		return false
	case TypeArray:
		return []any{}
	case TypeObject:
		return map[string]any{}
	}
	return nil
}

// checkLocalRefs refuses JSON schemas that would load other documents ($ref
// to a file or URL): a definition must not make the plugin read files or
// call out.
func checkLocalRefs(v any) error {
	switch v := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(v) {
			e := v[k]
			switch k {
			case "$ref", "$dynamicRef", "$recursiveRef":
				if s, ok := e.(string); ok && !strings.HasPrefix(s, "#") {
					return fmt.Errorf("%s %s points outside the schema; only local references (#/…) are allowed", k, errdef.Quote(s))
				}
			case "$schema":
				if s, ok := e.(string); ok && !strings.HasPrefix(s, "http://json-schema.org/") && !strings.HasPrefix(s, "https://json-schema.org/") {
					return fmt.Errorf("$schema %s is not a json-schema.org draft", errdef.Quote(s))
				}
			}
			if err := checkLocalRefs(e); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range v {
			if err := checkLocalRefs(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// validateSchema validates v against a JSON schema (local references only).
func validateSchema(v any, schema map[string]any) error {
	if err := checkLocalRefs(schema); err != nil {
		return err
	}
	root := schema
	values, isMap := v.(map[string]any)
	if !isMap {
		// The validator takes a map: wrap the value, keeping local definitions resolvable.
		root = map[string]any{"type": "object", "properties": map[string]any{"value": schema}}
		for _, k := range []string{"definitions", "$defs"} {
			if d, ok := schema[k]; ok {
				root[k] = d
			}
		}
		values = map[string]any{"value": v}
	}
	js, err := json.Marshal(root)
	if err != nil {
		return fmt.Errorf("schema: %v", err)
	}
	if err := commonutil.ValidateAgainstSingleSchema(values, js); err != nil {
		msg := strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " ")
		return fmt.Errorf("does not satisfy the schema: %s", strings.TrimSuffix(msg, ";"))
	}
	return nil
}

// ParamNames returns the declared parameter names, sorted.
func (d *Definition) ParamNames() []string {
	names := sortedKeys(d.Spec.Parameters)
	sort.Strings(names)
	return names
}
