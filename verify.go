package argocdocm

import (
	"context"
	"fmt"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/signing"
)

// Provenance annotations (opt-in, Request.Provenance, or forced by the rule's
// Provenance): which signed component
// produced an object, readable with kubectl get -o yaml.
const (
	AnnotationComponent        = "argocd-ocm-plugin.io/component"
	AnnotationDescriptorDigest = "argocd-ocm-plugin.io/descriptor-digest"
	AnnotationResource         = "argocd-ocm-plugin.io/resource"
	AnnotationSignature        = "argocd-ocm-plugin.io/verified-signatures"
)

// verify checks the component version against the signature policy (when there
// is one) and image references that pin a digest against their resource
// digests (always). It returns the names of the verified signatures.
func (r *Renderer) verify(ctx context.Context, repo ocm.Repository, cv ocm.ComponentVersion) ([]string, error) {
	d := cv.Descriptor()
	if err := checkImageDigests(d); err != nil {
		return nil, err
	}
	if r.signatures == nil {
		return nil, nil
	}
	v := *r.signatures
	if v.Lookup == nil {
		v.Lookup = signing.RepositoryLookup(repo)
	}
	report, err := v.Verify(ctx, d)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, s := range report.Signatures {
		names = append(names, s.Signature)
	}
	return names, nil
}

// Verifier is the signature verifier the renderer's rule (or a Person's
// flags) requires, nil when none: what verify and the ApplicationSet
// generator check signatures with.
func (r *Renderer) Verifier() *signing.Verifier { return r.signatures }

// requireSignedDigest refuses to render a resource whose content the
// signature does not cover.
func requireSignedDigest(res *ocm.Resource) error {
	d := res.Digest
	if d == nil || d.Value == "" || d.HashAlgorithm == signing.NoDigest || d.NormalisationAlgorithm == signing.ExcludeFromSignature {
		return fmt.Errorf("%w: resource %s has no digest in the descriptor, so the signature does not cover its content",
			errdef.ErrSignature, res.Identity())
	}
	return nil
}

// checkImageDigests: an image reference that pins a digest must agree with the
// resource digest the component declares for that image.
func checkImageDigests(d *ocm.Descriptor) error {
	for i := range d.Resources {
		res := &d.Resources[i]
		ref := res.Access.String("imageReference")
		_, pinned, ok := strings.Cut(ref, "@")
		if !ok || res.Digest == nil || res.Digest.NormalisationAlgorithm != "ociArtifactDigest/v1" {
			continue
		}
		alg, hexValue, _ := strings.Cut(pinned, ":")
		if alg == "sha256" && hexValue != res.Digest.Value {
			return fmt.Errorf("%w: resource %s: image reference %s pins %s, the component declares sha256:%s",
				errdef.ErrDigestMismatch, res.Identity(), ref, pinned, res.Digest.Value)
		}
	}
	return nil
}

func annotateProvenance(objs []manifests.Object, cv ocm.ComponentVersion, res *ocm.Resource, signatures []string) {
	d := cv.Descriptor()
	for _, o := range objs {
		md, _ := o["metadata"].(map[string]any)
		if md == nil {
			md = map[string]any{}
			o["metadata"] = md
		}
		ann, _ := md["annotations"].(map[string]any)
		if ann == nil {
			ann = map[string]any{}
			md["annotations"] = ann
		}
		ann[AnnotationComponent] = d.Name + ":" + d.Version
		if dg := cv.DescriptorDigest(); dg != "" {
			ann[AnnotationDescriptorDigest] = dg
		}
		ann[AnnotationResource] = res.Identity().String()
		if len(signatures) > 0 {
			ann[AnnotationSignature] = strings.Join(signatures, ",")
		}
	}
}
