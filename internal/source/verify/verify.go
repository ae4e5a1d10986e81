package verify

import (
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/accessmethod"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/artifactset"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/access"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/signing"
)

// Status of one resource.
type Status string

// Resource statuses.
const (
	// Checked: the content (or the digest the access pins) was hashed and
	// equals the declared digest.
	Checked Status = "checked"
	// Mismatch: the content differs from the declared digest, or it is
	// missing or corrupt in the repository. Verification fails.
	Mismatch Status = "mismatch"
	// NotCheckable: nothing to compare offline; Detail says why.
	NotCheckable Status = "not-checkable"
)

// Resource is the result for one resource of one component version.
type Resource struct {
	Component string `json:"component"`
	Version   string `json:"version"`
	Resource  string `json:"resource"` // identity: name and extra identity
	Access    string `json:"access"`   // access type as written
	// Digest is the declared digest, "normalisation/hash:value", "" if none.
	Digest string `json:"digest,omitempty"`
	Status Status `json:"status"`
	// Detail: what was compared (Checked), what differs (Mismatch) or why
	// nothing could be compared (NotCheckable).
	Detail string `json:"detail"`
}

// Report is everything Run checked.
type Report struct {
	Signatures []signing.Result          `json:"signatures"`
	References []signing.ReferenceResult `json:"references"`
	Resources  []Resource                `json:"resources"`
}

// Mismatches returns the resources whose status is Mismatch.
func (r *Report) Mismatches() []Resource {
	var out []Resource
	for _, res := range r.Resources {
		if res.Status == Mismatch {
			out = append(out, res)
		}
	}
	return out
}

// Verifier checks a component version and what it references.
type Verifier struct {
	// Signatures are the required signatures (their names and keys); nil
	// checks no signature, only digests.
	Signatures *signing.Verifier
	// Repository resolves referenced component versions; their resources
	// are read from the version's own store.
	Repository ocm.Repository
	// MaxBlobSize bounds an artifact set read to find its manifest digest
	// (default access.DefaultMaxBlobSize); other blobs are hashed streaming.
	MaxBlobSize int64
	// MaxDepth bounds reference recursion (default signing.DefaultMaxDepth).
	MaxDepth int
}

// Run verifies cv. A signature or reference failure, or a repository that
// cannot be read, is returned as an error and the report holds what was
// checked before it. Resource mismatches are in the report and make Run
// return an error wrapping errdef.ErrDigestMismatch that names the first
// of them.
func (v *Verifier) Run(ctx context.Context, cv ocm.ComponentVersion) (*Report, error) {
	rep := &Report{}
	d := cv.Descriptor()
	if v.Signatures != nil {
		sv := *v.Signatures
		if sv.Lookup == nil && v.Repository != nil {
			sv.Lookup = signing.RepositoryLookup(v.Repository)
		}
		if sv.MaxDepth == 0 {
			sv.MaxDepth = v.MaxDepth
		}
		sr, err := sv.Verify(ctx, d)
		if sr != nil {
			rep.Signatures, rep.References = sr.Signatures, sr.References
		}
		if err != nil {
			return rep, err
		}
	} else {
		refs, err := signing.VerifyReferences(ctx, d, v.lookup(), signing.WithMaxDepth(v.MaxDepth))
		rep.References = refs
		if err != nil {
			return rep, err
		}
	}
	// The references were verified above: every one with a digest points to
	// a descriptor with exactly that digest. Their resources are checked
	// here, each component version once.
	seen := map[string]bool{}
	if err := v.walk(ctx, cv, rep, seen, 0); err != nil {
		return rep, err
	}
	if m := rep.Mismatches(); len(m) > 0 {
		more := ""
		if len(m) > 1 {
			var also []string
			for _, r := range m[1:] {
				also = append(also, r.Component+":"+r.Version+" "+r.Resource)
			}
			more = " (also mismatched: " + strings.Join(also, ", ") + ")"
		}
		return rep, &errdef.Error{Component: m[0].Component, Version: m[0].Version, Resource: m[0].Resource,
			Err: fmt.Errorf("%w: %s%s", errdef.ErrDigestMismatch, m[0].Detail, more)}
	}
	return rep, nil
}

func (v *Verifier) lookup() signing.LookupFunc {
	if v.Repository == nil {
		return nil
	}
	return signing.RepositoryLookup(v.Repository)
}

func (v *Verifier) walk(ctx context.Context, cv ocm.ComponentVersion, rep *Report, seen map[string]bool, depth int) error {
	d := cv.Descriptor()
	self := d.Name + ":" + d.Version
	if seen[self] {
		return nil
	}
	seen[self] = true
	for i := range d.Resources {
		if err := ctx.Err(); err != nil {
			return err
		}
		rep.Resources = append(rep.Resources, v.checkResource(ctx, cv, &d.Resources[i]))
	}
	maxDepth := v.MaxDepth
	if maxDepth <= 0 {
		maxDepth = signing.DefaultMaxDepth
	}
	for _, ref := range d.References {
		if ref.Digest == nil || v.Repository == nil {
			continue // not covered by a signature; listed in References
		}
		if depth+1 > maxDepth {
			return fmt.Errorf("%w: component %s: reference %s: deeper than %d levels", errdef.ErrLimitExceeded, self, errdef.Quote(ref.Name), maxDepth)
		}
		rcv, err := v.Repository.LookupComponentVersion(ctx, ref.ComponentName, ref.Version)
		if err != nil {
			return fmt.Errorf("component %s: reference %s to %s:%s: %w", self, errdef.Quote(ref.Name), ref.ComponentName, ref.Version, err)
		}
		if err := v.walk(ctx, rcv, rep, seen, depth+1); err != nil {
			return err
		}
	}
	return nil
}

func (v *Verifier) checkResource(ctx context.Context, cv ocm.ComponentVersion, res *ocm.Resource) Resource {
	d := cv.Descriptor()
	out := Resource{Component: d.Name, Version: d.Version, Resource: res.Identity().String(), Access: res.Access.Type}
	dg := res.Digest
	if dg == nil || dg.Value == "" {
		out.Status, out.Detail = NotCheckable, "no digest declared: a signature does not cover its content"
		return out
	}
	out.Digest = dg.NormalisationAlgorithm + "/" + dg.HashAlgorithm + ":" + dg.Value
	for _, f := range []string{dg.HashAlgorithm, dg.NormalisationAlgorithm, dg.Value} {
		if f == signing.ExcludeFromSignature || f == signing.NoDigest {
			out.Status, out.Detail = NotCheckable, "digest is "+f+": excluded from signing"
			return out
		}
	}
	// Unknown types, like remote ones, are checked by the digest their
	// reference pins, if any.
	switch m, _ := accessmethod.Lookup(res.Access.Type); m.Where {
	case accessmethod.NoContent:
		out.Status, out.Detail = NotCheckable, "access type "+m.Name+": no content"
	case accessmethod.Local:
		v.checkLocal(ctx, cv, res, &out)
	default:
		checkPinned(res, &out)
	}
	return out
}

// checkLocal re-reads a local blob and hashes it by the digest's
// normalisation.
func (v *Verifier) checkLocal(ctx context.Context, cv ocm.ComponentVersion, res *ocm.Resource, out *Resource) {
	dg := res.Digest
	newHash, ok := localDigestHash(dg, out)
	if !ok {
		return
	}
	b, err := cv.OpenLocalBlob(ctx, res.Access)
	if err != nil {
		if _, ok := res.Access.GlobalAccess(); ok && errors.Is(err, errdef.ErrNotFound) {
			out.Status, out.Detail = NotCheckable, "local blob is not in this repository; its globalAccess needs the registry"
			return
		}
		out.Status, out.Detail = Mismatch, "local blob cannot be read: "+err.Error()
		return
	}
	if dg.NormalisationAlgorithm == signing.GenericBlobDigestV1 {
		checkBlobStream(b, dg, newHash, out)
		return
	}
	v.checkArtifactSet(b, res, newHash, out)
}

// localDigestHash returns the hash of a digest this verifier can compute
// from a local blob; otherwise it marks out not checkable.
func localDigestHash(dg *ocm.Digest, out *Resource) (func() hash.Hash, bool) {
	var newHash func() hash.Hash
	switch {
	case strings.EqualFold(dg.HashAlgorithm, "SHA-256"), strings.EqualFold(dg.HashAlgorithm, "sha256"):
		newHash = sha256.New
	case strings.EqualFold(dg.HashAlgorithm, "SHA-512"), strings.EqualFold(dg.HashAlgorithm, "sha512"):
		newHash = sha512.New
	default:
		out.Status, out.Detail = NotCheckable, fmt.Sprintf("hash algorithm %s is not supported (SHA-256, SHA-512)", errdef.Quote(dg.HashAlgorithm))
		return nil, false
	}
	switch dg.NormalisationAlgorithm {
	case signing.GenericBlobDigestV1, signing.OCIArtifactDigestV1:
	default:
		out.Status, out.Detail = NotCheckable, fmt.Sprintf("digest normalisation %s is not computable offline (supported: %s, %s)",
			errdef.Quote(dg.NormalisationAlgorithm), signing.GenericBlobDigestV1, signing.OCIArtifactDigestV1)
		return nil, false
	}
	return newHash, true
}

// checkBlobStream hashes a blob of the generic blob digest, and closes it.
func checkBlobStream(b ocm.Blob, dg *ocm.Digest, newHash func() hash.Hash, out *Resource) {
	// Streamed: memory stays flat whatever the blob weighs. The reader
	// verifies the digest that names the blob at EOF, so a flipped byte
	// fails here before the resource digest is compared.
	h := newHash()
	_, err := io.Copy(h, b)
	b.Close()
	if err != nil {
		out.Status, out.Detail = Mismatch, "local blob: "+err.Error()
		return
	}
	compare(out, hex.EncodeToString(h.Sum(nil)), dg.Value, "blob "+dg.HashAlgorithm)
}

// checkArtifactSet reads a blob of the OCI artifact digest whole, checks
// the blobs of its main manifest, and compares that manifest's digest; it
// closes b.
func (v *Verifier) checkArtifactSet(b ocm.Blob, res *ocm.Resource, newHash func() hash.Hash, out *Resource) {
	dg := res.Digest
	limit := v.MaxBlobSize
	if limit <= 0 {
		limit = access.DefaultMaxBlobSize
	}
	// An artifact set is read whole (its index and manifests are inside).
	data, err := access.ReadBlob(b, limit)
	b.Close()
	if err != nil {
		if errors.Is(err, errdef.ErrLimitExceeded) {
			out.Status, out.Detail = NotCheckable, err.Error()
			return
		}
		// The store names blobs by digest and the reader verifies it: a
		// flipped byte ends here.
		out.Status, out.Detail = Mismatch, "local blob: "+err.Error()
		return
	}
	mt := res.Access.String("mediaType")
	if mt == "" {
		mt = b.MediaType()
	}
	if !artifactset.IsArtifactSet(mt) {
		out.Status, out.Detail = Mismatch, fmt.Sprintf("digest is %s but the local blob is %s, not an OCI artifact set", dg.NormalisationAlgorithm, errdef.Quote(mt))
		return
	}
	set, err := artifactset.Read(data)
	if err != nil {
		out.Status, out.Detail = Mismatch, err.Error()
		return
	}
	if err := checkSetBlobs(set); err != nil {
		out.Status, out.Detail = Mismatch, "artifact set: "+err.Error()
		return
	}
	main := set.Main.Digest.String()
	alg, hexValue, _ := strings.Cut(main, ":")
	if (alg == "sha512") != (newHash().Size() == sha512.Size) {
		out.Status, out.Detail = NotCheckable, fmt.Sprintf("artifact set manifest digest %s is not %s", main, dg.HashAlgorithm)
		return
	}
	compare(out, hexValue, dg.Value, "artifact set main manifest")
}

// checkSetBlobs checks that every blob the main manifest names hashes to its
// digest: the manifest digest covers the layers only through them.
func checkSetBlobs(set *artifactset.Set) error {
	for _, l := range append([]ocispec.Descriptor{set.Manifest.Config}, set.Manifest.Layers...) {
		if l.Digest == "" {
			continue
		}
		c, err := set.Blob(l.Digest.String())
		if err == nil && l.Size > 0 && int64(len(c)) != l.Size {
			err = fmt.Errorf("%w: blob %s is %d bytes, the manifest says %d", errdef.ErrDigestMismatch, l.Digest, len(c), l.Size)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checkPinned compares the digest a remote access pins with the declared
// one; content in a registry or Helm repository is not read here.
func checkPinned(res *ocm.Resource, out *Resource) {
	dg := res.Digest
	field, ref := "", ""
	for _, k := range []string{"imageReference", "reference"} {
		if s := res.Access.String(k); s != "" {
			field, ref = k, s
			break
		}
	}
	_, pinned, ok := strings.Cut(ref, "@")
	if !ok {
		where := ref
		if where == "" {
			where = "no reference"
		}
		out.Status, out.Detail = NotCheckable, fmt.Sprintf("access %s (%s) pins no digest and its content is not read offline", res.Access.Type, where)
		return
	}
	// The OCM CLI v0.13+ declares an OCI artifact's digest as
	// genericBlobDigest/v1: the artifact's blob is its manifest, so that
	// digest is the manifest digest a pin names, as ociArtifactDigest/v1 is.
	if dg.NormalisationAlgorithm != signing.OCIArtifactDigestV1 && dg.NormalisationAlgorithm != signing.GenericBlobDigestV1 {
		out.Status, out.Detail = NotCheckable, fmt.Sprintf("%s pins %s but the declared digest is %s, not %s", field, pinned, dg.NormalisationAlgorithm, signing.OCIArtifactDigestV1)
		return
	}
	alg, hexValue, _ := strings.Cut(pinned, ":")
	want := map[string]string{"sha256": "SHA-256", "sha512": "SHA-512"}[alg]
	if want == "" || !strings.EqualFold(strings.ReplaceAll(dg.HashAlgorithm, "-", ""), strings.ReplaceAll(want, "-", "")) {
		// A pin in another algorithm cannot be compared; a pin that is not a
		// digest at all is a broken reference.
		if want == "" {
			out.Status, out.Detail = Mismatch, fmt.Sprintf("%s %s pins %s, which is not a sha256 or sha512 digest", field, ref, errdef.Quote(pinned))
			return
		}
		out.Status, out.Detail = NotCheckable, fmt.Sprintf("%s pins a %s digest, the declared digest is %s", field, alg, dg.HashAlgorithm)
		return
	}
	if !strings.EqualFold(hexValue, dg.Value) {
		out.Status, out.Detail = Mismatch, fmt.Sprintf("%s %s pins %s, the component declares %s", field, ref, pinned, alg+":"+dg.Value)
		return
	}
	out.Status, out.Detail = Checked, fmt.Sprintf("digest pinned by %s (the artifact itself is in a registry, not read offline)", field)
}

func compare(out *Resource, got, want, what string) {
	if strings.EqualFold(got, want) {
		out.Status, out.Detail = Checked, what+" re-hashed"
		return
	}
	out.Status, out.Detail = Mismatch, fmt.Sprintf("%s hashes to %s, the component declares %s", what, strings.ToLower(got), want)
}
