package config

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"sigs.k8s.io/kustomize/api/types"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/pipeline"
)

// kustomizeSpec is a render's kustomize field: the fields of a
// kustomization that the plugin writes as an overlay over the entry, in
// kustomize's own spelling (see docs/kustomize.md). Any string may hold
// ${…}, evaluated as in values before the field is read, so a replica
// count may be "${parameters.replicas}".
type kustomizeSpec struct {
	Namespace          string                `json:"namespace,omitempty"`
	NamePrefix         string                `json:"namePrefix,omitempty"`
	NameSuffix         string                `json:"nameSuffix,omitempty"`
	Labels             []types.Label         `json:"labels,omitempty"`
	CommonAnnotations  map[string]string     `json:"commonAnnotations,omitempty"`
	Images             []types.Image         `json:"images,omitempty"`
	Replicas           []types.Replica       `json:"replicas,omitempty"`
	Patches            []types.Patch         `json:"patches,omitempty"`
	ConfigMapGenerator []types.ConfigMapArgs `json:"configMapGenerator,omitempty"`
	SecretGenerator    []types.SecretArgs    `json:"secretGenerator,omitempty"`
	Components         []string              `json:"components,omitempty"`
}

// kustomizeFields are the json names of kustomizeSpec's fields.
var kustomizeFields, kustomizeFieldList = func() (map[string]bool, string) {
	m := map[string]bool{}
	var names []string
	t := reflect.TypeOf(kustomizeSpec{})
	for i := range t.NumField() {
		n, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		m[n] = true
		names = append(names, n)
	}
	return m, strings.Join(names, ", ")
}()

// kustomizeField is where a render's kustomize field sits, for messages
// and the expressions --explain must not show (secretGenerator).
const kustomizeField = "kustomize"

// definitionOverlay evaluates the kustomize field of rp's render into an
// overlay; nil when there is none.
func (rs *resolver) definitionOverlay(ctx context.Context, rp renderPlan) (*pipeline.Overlay, error) {
	if rp.render == nil || len(rp.render.Kustomize) == 0 {
		return nil, nil
	}
	where := fmt.Sprintf("%s: spec.renders[%d].%s", rs.def.Source, rp.index, kustomizeField)
	if rp.res.Type == pipeline.TypeHelmChart {
		return nil, fmt.Errorf("%w: %s: resource %s is a helmChart; a kustomize overlay applies to a directoryTree whose entry is a kustomization", errdef.ErrInvalidInput, where, rp.res.Identity())
	}
	for k := range rp.render.Kustomize {
		if !kustomizeFields[k] {
			// encoding/json matches field names in any case; kustomize does not.
			return nil, fmt.Errorf("%w: %s: unknown field %q (the fields of a kustomization: %s)", errdef.ErrInvalidInput, where, truncate(k, 60), kustomizeFieldList)
		}
	}
	v, err := rs.eval.Walk(ctx, where, normalize(map[string]any(rp.render.Kustomize)), rs.vars)
	if err != nil {
		return nil, err
	}
	js, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errdef.ErrInvalidInput, where, err)
	}
	var spec kustomizeSpec
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		// json's messages name fields and types, never values.
		return nil, fmt.Errorf("%w: %s: %s", errdef.ErrInvalidInput, where, strings.TrimPrefix(err.Error(), "json: "))
	}
	return &pipeline.Overlay{
		Namespace:          spec.Namespace,
		NamePrefix:         spec.NamePrefix,
		NameSuffix:         spec.NameSuffix,
		Labels:             spec.Labels,
		CommonAnnotations:  spec.CommonAnnotations,
		Images:             spec.Images,
		Replicas:           spec.Replicas,
		Patches:            spec.Patches,
		ConfigMapGenerator: spec.ConfigMapGenerator,
		SecretGenerator:    spec.SecretGenerator,
		Components:         spec.Components,
	}, nil
}

// joinOverlays adds what the planner derived (generator merges from
// patches, images from localisation) to the definition's overlay: the
// definition's fields first, so that a derived merge of the same generator
// comes after them.
func joinOverlays(def, derived *pipeline.Overlay) *pipeline.Overlay {
	switch {
	case def == nil:
		return derived
	case derived == nil:
		return def
	}
	out := *def
	out.Images = append(append([]types.Image(nil), def.Images...), derived.Images...)
	out.ConfigMapGenerator = append(append([]types.ConfigMapArgs(nil), def.ConfigMapGenerator...), derived.ConfigMapGenerator...)
	out.SecretGenerator = append(append([]types.SecretArgs(nil), def.SecretGenerator...), derived.SecretGenerator...)
	return &out
}

// redactKustomizeSecrets hides the results of the expressions of a
// kustomize field's secretGenerator.
func redactKustomizeSecrets(r *Report) {
	for i, e := range r.Expressions {
		if _, rest, ok := strings.Cut(e.Where, "."+kustomizeField+"."); ok && strings.HasPrefix(rest, "secretGenerator") {
			r.Expressions[i].Result = secretValueShown
		}
	}
}
