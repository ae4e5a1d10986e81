package cmp

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/confine"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/param"
)

// Variables Argo CD sets for a generate command.
const (
	EnvAppName         = "ARGOCD_APP_NAME"
	EnvAppNamespace    = "ARGOCD_APP_NAMESPACE"
	EnvAppParameters   = "ARGOCD_APP_PARAMETERS"
	EnvKubeVersion     = "KUBE_VERSION"
	EnvKubeAPIVersions = "KUBE_API_VERSIONS"
	EnvSourceRepoURL   = "ARGOCD_APP_SOURCE_REPO_URL"
	EnvSourcePath      = "ARGOCD_APP_SOURCE_PATH"
	EnvSourceRevision  = "ARGOCD_APP_SOURCE_TARGET_REVISION"
	EnvProjectName     = "ARGOCD_APP_PROJECT_NAME"
	envPrefix          = "ARGOCD_ENV_"
)

// text renders a parameter's value as instance-parameter text: a string as
// is, an array or map as JSON (the definition's types parse it).
func (p Parameter) text() (string, bool, error) {
	switch {
	case p.String != nil:
		return *p.String, *p.String != "", nil
	case p.Array != nil:
		b, err := json.Marshal(p.Array)
		return string(b), true, err
	case p.Map != nil:
		b, err := json.Marshal(p.Map)
		return string(b), true, err
	}
	return "", false, nil
}

// Parameter is one entry of ARGOCD_APP_PARAMETERS.
type Parameter struct {
	Name   string            `json:"name"`
	String *string           `json:"string,omitempty"`
	Array  []string          `json:"array,omitempty"`
	Map    map[string]string `json:"map,omitempty"`
}

// Env is the generate command's environment.
type Env struct {
	Getenv func(string) string
	params map[string]Parameter
}

// ParseParameters decodes ARGOCD_APP_PARAMETERS.
func ParseParameters(s string) (map[string]Parameter, error) {
	out := map[string]Parameter{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	var ps []Parameter
	if err := json.Unmarshal([]byte(s), &ps); err != nil {
		return nil, fmt.Errorf("%w: %s is not a JSON array of parameters: %v", errdef.ErrInvalidInput, EnvAppParameters, err)
	}
	for _, p := range ps {
		out[p.Name] = p
	}
	return out, nil
}

func (e *Env) str(name string) string {
	if p, ok := e.params[name]; ok && p.String != nil && *p.String != "" {
		return *p.String
	}
	return e.Getenv(envPrefix + envName(name))
}

// list reads an array parameter, or a string parameter / env value holding a
// comma-separated list.
func (e *Env) list(name string) []string {
	if p, ok := e.params[name]; ok && len(p.Array) > 0 {
		return nonEmpty(p.Array)
	}
	return splitList(e.str(name))
}

// stringMap reads a map parameter, or its ARGOCD_ENV_ fallback holding a YAML
// map; values that are not strings are kept as JSON text (a deployment
// definition types them).
func (e *Env) stringMap(name string) (map[string]string, error) {
	if p, ok := e.params[name]; ok && len(p.Map) > 0 {
		return p.Map, nil
	}
	s := e.Getenv(envPrefix + envName(name))
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("%w: %s%s is not a YAML map: %v", errdef.ErrInvalidInput, envPrefix, envName(name), err)
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if str, ok := v.(string); ok {
			out[k] = str
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("%w: %s%s: %s: %v", errdef.ErrInvalidInput, envPrefix, envName(name), k, err)
		}
		out[k] = string(b)
	}
	return out, nil
}

func envName(param string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			return r
		default:
			return '_'
		}
	}, param)
}

func splitList(s string) []string {
	return nonEmpty(strings.Split(s, ","))
}

func nonEmpty(in []string) []string {
	var out []string
	for _, s := range in {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Request builds the pipeline request of a generate command. A parameter
// the plugin does not know is refused, with the known names.
func Request(getenv func(string) string) (argocdocm.Request, error) {
	return RequestFromEnvironment(getenv, nil)
}

// RequestFromEnvironment is Request that also refuses an ARGOCD_ENV_
// variable the plugin does not know; environ lists the environment's
// variables ("NAME=value" or "NAME").
func RequestFromEnvironment(getenv func(string) string, environ []string) (argocdocm.Request, error) {
	app := getenv(EnvAppName)
	params, err := ParseParameters(getenv(EnvAppParameters))
	if err != nil {
		return argocdocm.Request{}, errdef.Wrap(err, errdef.Error{Application: app})
	}
	var envNames []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		envNames = append(envNames, name)
	}
	if err := checkNames(params, envNames); err != nil {
		return argocdocm.Request{}, errdef.Wrap(err, errdef.Error{Application: app})
	}
	e := &Env{Getenv: getenv, params: params}
	req := argocdocm.Request{
		Application: app,
		Repository:  e.str(param.Repository),
		Component:   e.str(param.Component),
		Version:     e.str(param.Version),
		Resources:   e.list(param.Resource),
		Path:        e.str(param.Path),
		ValueFiles:  e.list(param.ValueFiles),
		ReleaseName: app,
		Namespace:   getenv(EnvAppNamespace),
		KubeVersion: getenv(EnvKubeVersion),
		APIVersions: splitList(getenv(EnvKubeAPIVersions)),
		Provenance:  strings.EqualFold(strings.TrimSpace(e.str(param.Provenance)), "true"),
		Localize:    strings.EqualFold(strings.TrimSpace(e.str(param.Localize)), "true"),
		Platform: argocdocm.PlatformRequest{
			Force:       strings.EqualFold(strings.TrimSpace(e.str(param.Platform)), "true"),
			ConfigFiles: e.list(param.PlatformConfig),
			Project:     getenv(EnvProjectName),
			Source: argocdocm.PlatformSource{
				RepoURL:        getenv(EnvSourceRepoURL),
				Path:           getenv(EnvSourcePath),
				TargetRevision: getenv(EnvSourceRevision),
			},
		},
	}
	ectx := errdef.Error{Application: app, Component: req.Component, Version: req.Version}
	if err := e.confineFiles(&req); err != nil {
		return req, errdef.Wrap(err, ectx)
	}
	instance, err := e.instanceParameters()
	if err != nil {
		return req, errdef.Wrap(err, ectx)
	}
	req.Parameters = instance
	vals, err := e.values()
	if err != nil {
		return req, errdef.Wrap(err, ectx)
	}
	req.Values = vals
	return req, nil
}

// confineFiles sets the request's definition file and refuses it, or a
// values or platform config file, outside the Application's source
// directory.
func (e *Env) confineFiles(req *argocdocm.Request) error {
	if def := strings.TrimSpace(e.str(param.Definition)); def != "" {
		// A file must stay inside the Application's source directory (the
		// working directory of generate): the repo-server holds other repositories.
		if !strings.HasPrefix(def, "resource:") && !filepath.IsLocal(def) {
			return confine.Refused(param.Definition, def)
		}
		req.DefinitionFile = def
	}
	// Files named by the Application must stay inside its source directory
	// (the working directory of generate): the repo-server holds other
	// checkouts and its own secrets (cf. CVE-2022-24348).
	// (One shape with the refusals of package confine, which also resolves
	// symbolic links.)
	for _, named := range []struct {
		param string
		files []string
	}{{param.ValueFiles, req.ValueFiles}, {param.PlatformConfig, req.Platform.ConfigFiles}} {
		for _, f := range named.files {
			if !filepath.IsLocal(f) {
				return confine.Refused(named.param, f)
			}
		}
	}
	return nil
}

// instanceParameters are the instance parameters of the map parameter and
// those announced one by one ("parameters.<name>", typed fields in the UI),
// which win over the map.
func (e *Env) instanceParameters() (map[string]string, error) {
	instance, err := e.stringMap(param.Parameters)
	if err != nil {
		return nil, err
	}
	for name, p := range e.params {
		key, ok := strings.CutPrefix(name, param.InstancePrefix)
		if !ok || key == "" {
			continue
		}
		text, set, err := p.text()
		if err != nil {
			return nil, fmt.Errorf("%w: parameter %s: %v", errdef.ErrInvalidInput, errdef.Quote(name), err)
		}
		if !set {
			continue
		}
		if instance == nil {
			instance = map[string]string{}
		}
		instance[key] = text
	}
	return instance, nil
}

// values is the values parameter, a YAML map; nil when it is not set.
func (e *Env) values() (map[string]any, error) {
	v := e.str(param.Values)
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	vals := map[string]any{}
	if err := yaml.Unmarshal([]byte(v), &vals); err != nil {
		return nil, fmt.Errorf("%w: parameter %s is not a YAML map: %v", errdef.ErrInvalidInput, errdef.Quote(param.Values), err)
	}
	return vals, nil
}
