package rgd

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/deployment"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/expr"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/rgd/graph"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/signing"
)

// ctfRegistry stands for the registry of a component version read from a
// CTF or archive in toOCI() of a local blob: there is none, and the
// reserved .invalid name makes sure nothing ever pulls from it (the plugin
// renders the bytes it holds).
const ctfRegistry = "ctf.invalid"

// binding is an OCM Resource node resolved: the descriptor resource and the
// component version that holds it.
type binding struct {
	node   string
	cv     ocm.ComponentVersion
	res    *ocm.Resource
	status map[string]any
	path   []string // referencePath names
}

// resolveResource resolves an evaluated OCM Resource node in the component
// being deployed and computes its status as OCM's controller does.
func (e *evaluation) resolveResource(ctx context.Context, r *RGD, n *graph.Node, obj map[string]any) (*binding, error) {
	where := fmt.Sprintf("%s: node %s", r.Source, n.ID)
	spec, _ := obj["spec"].(map[string]any)
	byRef, _ := dig(spec, "resource", "byReference").(map[string]any)
	if byRef == nil {
		return nil, fmt.Errorf("%w: %s: spec.resource.byReference is missing: the plugin resolves resources of the component being deployed by reference", errdef.ErrInvalidInput, where)
	}
	id, err := identity(byRef["resource"])
	if err != nil {
		return nil, fmt.Errorf("%w: %s: spec.resource.byReference.resource: %v", errdef.ErrInvalidInput, where, err)
	}
	cv := e.cv
	var names []string
	path, _ := byRef["referencePath"].([]any)
	for i, p := range path {
		rid, err := identity(p)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: spec.resource.byReference.referencePath[%d]: %v", errdef.ErrInvalidInput, where, i, err)
		}
		if cv, err = e.follow(ctx, cv, rid); err != nil {
			return nil, fmt.Errorf("%s: spec.resource.byReference.referencePath[%d]: %w", where, i, err)
		}
		names = append(names, rid["name"])
	}
	res, err := cv.Descriptor().Resource(id)
	if err != nil {
		return nil, fmt.Errorf("%s: spec.resource.byReference.resource: %w", where, err)
	}
	if err := e.checkDigest(res); err != nil {
		return nil, fmt.Errorf("%s: resource %s: %w", where, res.Identity(), err)
	}
	rv := e.resourceVar(cv, res)
	status := map[string]any{
		"resource":   rv,
		"component":  map[string]any{"component": cv.Descriptor().Name, "version": cv.Descriptor().Version},
		"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "Rendered", "message": "computed by argocd-ocm-plugin"}},
	}
	fields, _ := spec["additionalStatusFields"].(map[string]any)
	if len(fields) > 0 {
		// OCM's controller environment: the descriptor resource, toOCI().
		l := e.p.limits()
		ev := &expr.Evaluator{Variables: []string{"resource"}, CostLimit: l.CostLimit, Timeout: l.Timeout}
		add := map[string]any{}
		for _, k := range sortedKeys(fields) {
			s, ok := fields[k].(string)
			if !ok {
				return nil, fmt.Errorf("%w: %s: spec.additionalStatusFields.%s: want a CEL expression (a string)", errdef.ErrInvalidInput, where, k)
			}
			v, err := ev.Template(ctx, where+": spec.additionalStatusFields."+k, "${"+s+"}", map[string]any{"resource": rv})
			if err != nil {
				return nil, err
			}
			add[k] = v
		}
		status["additional"] = add
		for _, x := range ev.Evaluations() {
			x.Where = strings.Replace(x.Where, r.Source, r.Name, 1)
			e.report.Expressions = append(e.report.Expressions, x)
		}
	}
	obj["status"] = status
	return &binding{node: n.ID, cv: cv, res: res, status: status, path: names}, nil
}

// follow is one step of a referencePath: the referenced component version,
// its descriptor checked against the reference's digest when it has one.
func (e *evaluation) follow(ctx context.Context, cv ocm.ComponentVersion, id ocm.Identity) (ocm.ComponentVersion, error) {
	return e.p.follow(ctx, cv, id)
}

func (p *GraphPlanner) follow(ctx context.Context, cv ocm.ComponentVersion, id ocm.Identity) (ocm.ComponentVersion, error) {
	d := cv.Descriptor()
	var ref *ocm.Reference
	for i := range d.References {
		r := &d.References[i]
		if r.Name != id["name"] {
			continue
		}
		match := true
		for k, v := range id {
			if k != "name" && r.ExtraIdentity[k] != v {
				match = false
			}
		}
		if match {
			ref = r
			break
		}
	}
	if ref == nil {
		var names []string
		for _, r := range d.References {
			names = append(names, r.Name)
		}
		return nil, fmt.Errorf("%w: component %s:%s has no reference %s (references: %s)", errdef.ErrNotFound, d.Name, d.Version, id, errdef.Cut(strings.Join(names, ", ")))
	}
	repo := cv.Repository()
	if repo == nil {
		return nil, fmt.Errorf("%w: component %s:%s has no repository to look %s:%s up in", errdef.ErrNotFound, d.Name, d.Version, ref.ComponentName, ref.Version)
	}
	child, err := repo.LookupComponentVersion(ctx, ref.ComponentName, ref.Version)
	if err != nil {
		return nil, fmt.Errorf("reference %s (%s:%s): %w", ref.Name, ref.ComponentName, ref.Version, err)
	}
	if ref.Digest != nil && ref.Digest.Value != "" {
		got, err := signing.Digest(child.Descriptor(), ref.Digest.NormalisationAlgorithm, ref.Digest.HashAlgorithm)
		if err != nil {
			return nil, fmt.Errorf("reference %s (%s:%s): %w", ref.Name, ref.ComponentName, ref.Version, err)
		}
		if !strings.EqualFold(strings.TrimPrefix(got, "sha256:"), ref.Digest.Value) {
			return nil, fmt.Errorf("%w: reference %s (%s:%s): the descriptor's digest is %s, the reference says %s", errdef.ErrDigestMismatch, ref.Name, ref.ComponentName, ref.Version, got, ref.Digest.Value)
		}
	} else if p.Config != nil && p.Config.RequireDigests {
		return nil, fmt.Errorf("%w: reference %s (%s:%s) has no digest, so no signature covers it", errdef.ErrSignature, ref.Name, ref.ComponentName, ref.Version)
	}
	return child, nil
}

// checkDigest refuses what cannot be trusted: a resource without a digest
// when signatures are enforced, an image whose reference pins another
// digest than the descriptor's. Rendered resources are verified again as
// they are read.
func (e *evaluation) checkDigest(res *ocm.Resource) error {
	if res.Digest == nil || res.Digest.Value == "" {
		if e.p.Config != nil && e.p.Config.RequireDigests {
			return fmt.Errorf("%w: the resource has no digest, so no signature covers it", errdef.ErrSignature)
		}
		return nil
	}
	ref, _ := res.Access.Fields["imageReference"].(string)
	if _, pin, ok := strings.Cut(ref, "@"); ok && res.Digest.NormalisationAlgorithm == "ociArtifactDigest/v1" {
		if !strings.EqualFold(strings.TrimPrefix(pin, "sha256:"), res.Digest.Value) {
			return fmt.Errorf("%w: the image reference pins %s, the resource digest is sha256:%s", errdef.ErrDigestMismatch, pin, res.Digest.Value)
		}
	}
	return nil
}

// resourceVar is the descriptor resource as OCM's controller gives it to
// additionalStatusFields: the resource of the descriptor, its access as it
// is. A local blob without a global access is given one naming the
// component's own repository, as toOCI() does in the controller.
func (e *evaluation) resourceVar(cv ocm.ComponentVersion, res *ocm.Resource) map[string]any {
	acc := map[string]any{}
	for k, v := range res.Access.Fields {
		acc[k] = jsonCopy(v)
	}
	acc["type"] = res.Access.Type
	if isLocalBlob(res.Access.Type) {
		if _, ok := acc["globalAccess"]; !ok {
			if lr, _ := acc["localReference"].(string); lr != "" {
				acc["globalAccess"] = map[string]any{"type": "ociArtifact",
					"imageReference": e.repositoryBase() + "/" + ocm.DescriptorRepository(cv.Descriptor().Name) + "@" + lr}
			}
		}
	}
	m := map[string]any{"name": res.Name, "version": res.Version, "type": res.Type, "relation": res.Relation, "access": acc}
	if len(res.ExtraIdentity) > 0 {
		extra := map[string]any{}
		for k, v := range res.ExtraIdentity {
			extra[k] = v
		}
		m["extraIdentity"] = extra
	}
	if res.Digest != nil {
		m["digest"] = map[string]any{"hashAlgorithm": res.Digest.HashAlgorithm, "normalisationAlgorithm": res.Digest.NormalisationAlgorithm, "value": res.Digest.Value}
	}
	var labels []any
	for _, l := range res.Labels {
		var v any
		_ = json.Unmarshal(l.Value, &v)
		labels = append(labels, map[string]any{"name": l.Name, "value": deployment.WholeNumbers(v)})
	}
	if labels != nil {
		m["labels"] = labels
	}
	return m
}

func isLocalBlob(t string) bool {
	t = strings.ToLower(strings.TrimSuffix(t, "/v1"))
	return t == "localblob"
}

// repositoryBase is the registry and path the component version is stored
// under ("host:port/path"), or ctfRegistry for a CTF or archive.
// The pipeline decided which it is as it opened the repository
// (plan.Input.Registry).
func (e *evaluation) repositoryBase() string {
	if e.req.Registry != "" {
		return e.req.Registry
	}
	return ctfRegistry
}

func dig(m map[string]any, keys ...string) any {
	var v any = m
	for _, k := range keys {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[k]
	}
	return v
}

// identity reads an identity map ({name, key: value…}).
func identity(v any) (ocm.Identity, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("want an identity {name: …}")
	}
	id := ocm.Identity{}
	for k, x := range m {
		s, ok := x.(string)
		if !ok {
			return nil, fmt.Errorf("identity field %s is not a string", errdef.Field(k))
		}
		id[k] = s
	}
	if id["name"] == "" {
		return nil, fmt.Errorf("the identity has no name")
	}
	return id, nil
}

// jsonCopy is v through JSON, with whole numbers int64 (WholeNumbers).
func jsonCopy(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	_ = json.Unmarshal(b, &out)
	return deployment.WholeNumbers(out)
}
