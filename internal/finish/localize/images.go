package localize

import (
	"fmt"
	"sort"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/accessmethod"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/imageref"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// Resource types that hold container images.
const (
	TypeOCIImage    = "ociImage"
	TypeOCIArtifact = "ociArtifact"
)

// Image is an image resource of a component version and where the component
// says it lives.
type Image struct {
	Resource *ocm.Resource
	// Ref is the image's location as the access names it.
	Ref imageref.Reference
	// Digest is the manifest digest the component knows: the reference's own,
	// else the resource digest (ociArtifactDigest/v1); "" when unknown.
	Digest string
}

// Location is where the component says the image lives, pinned by digest
// when the component knows it.
func (i Image) Location() imageref.Reference {
	r := i.Ref
	r.Digest = i.Digest
	return r
}

// Identity of the image resource, for messages.
func (i Image) Identity() string { return i.Resource.Identity().String() }

// IsImage reports whether a resource holds a container image.
func IsImage(res *ocm.Resource) bool {
	return res.Type == TypeOCIImage || res.Type == TypeOCIArtifact
}

// ImageOf returns where an image resource lives. It reads the image
// reference of an access that has one (ociArtifact), or of the globalAccess
// of a local blob (a transferred image); other accesses have no registry
// location.
func ImageOf(res *ocm.Resource) (Image, error) {
	acc := res.Access
	ref := imageRef(acc)
	if m, _ := accessmethod.Lookup(acc.Type); ref == "" && m.GlobalAccess {
		if g, ok := acc.GlobalAccess(); ok {
			ref = imageRef(*g)
		}
	}
	if ref == "" {
		return Image{}, fmt.Errorf("%w: image resource %s has access %s, which names no registry location (want %s)",
			errdef.ErrUnsupportedAccess, res.Identity(), acc.Type, wantImageRef())
	}
	r, err := imageref.Parse(ref)
	if err != nil {
		return Image{}, fmt.Errorf("%w: image resource %s: %v", errdef.ErrInvalidDescriptor, res.Identity(), err)
	}
	img := Image{Resource: res, Ref: r, Digest: r.Digest}
	if img.Digest == "" && res.Digest != nil && res.Digest.NormalisationAlgorithm == "ociArtifactDigest/v1" && res.Digest.Value != "" {
		alg := strings.ToLower(strings.ReplaceAll(res.Digest.HashAlgorithm, "-", ""))
		if alg == "" {
			alg = "sha256"
		}
		img.Digest = alg + ":" + res.Digest.Value
	}
	return img, nil
}

// imageRef is the image reference of acc, "" when its type has none.
func imageRef(acc ocm.Access) string {
	if m, _ := accessmethod.Lookup(acc.Type); m.ImageRef != "" {
		return acc.String(m.ImageRef)
	}
	return ""
}

// wantImageRef names the accesses that have an image reference, for
// messages: "ociArtifact with an imageReference".
func wantImageRef() string {
	var want []string
	for _, n := range accessmethod.Names(func(m accessmethod.Method) bool { return m.ImageRef != "" }) {
		m, _ := accessmethod.Lookup(n)
		want = append(want, n+" with an "+m.ImageRef)
	}
	return strings.Join(want, " or ")
}

// Images returns the image resources of a descriptor that have a registry
// location, in descriptor order, and a note for each image resource that has
// none (it cannot take part in localisation).
func Images(d *ocm.Descriptor) ([]Image, []string) {
	var out []Image
	var notes []string
	for i := range d.Resources {
		res := &d.Resources[i]
		if !IsImage(res) {
			continue
		}
		img, err := ImageOf(res)
		if err != nil {
			notes = append(notes, err.Error())
			continue
		}
		out = append(out, img)
	}
	return out, notes
}

// Match finds the image resource an image reference found in a manifest
// stands for. It matches when the image names (last repository path
// components) are equal, whatever the registry and the path before them (a
// mirror keeps or flattens the path: ghcr.io/a/b ↔ mirror:5000/copy/a/b), and
// the version agrees: the manifest's tag equals the resource reference's tag
// (or the resource version when its reference has no tag); a manifest
// reference with a digest matches on the digest. Among several matches the
// one sharing the longest path suffix wins; a tie between different
// locations is an error, because guessing would deploy the wrong image.
func Match(images []Image, ref imageref.Reference) (*Image, error) {
	var best []*Image
	bestLen := 0
	for i := range images {
		img := &images[i]
		n := pathSuffixLen(trimLibrary(ref), trimLibrary(img.Ref))
		if n == 0 {
			continue
		}
		if !sameVersion(ref, img) {
			continue
		}
		switch {
		case n > bestLen:
			best, bestLen = []*Image{img}, n
		case n == bestLen:
			best = append(best, img)
		}
	}
	switch len(best) {
	case 0:
		return nil, nil
	case 1:
		return best[0], nil
	}
	// Equal locations are not a conflict (two resources for one image).
	same := true
	for _, b := range best[1:] {
		if b.Location() != best[0].Location() {
			same = false
		}
	}
	if same {
		return best[0], nil
	}
	names := make([]string, len(best))
	for i, b := range best {
		names[i] = b.Identity() + " (" + b.Ref.String() + ")"
	}
	sort.Strings(names)
	return nil, fmt.Errorf("%w: image %s matches several image resources equally well: %s; map it explicitly",
		errdef.ErrInvalidInput, ref, strings.Join(names, ", "))
}

func sameVersion(ref imageref.Reference, img *Image) bool {
	if ref.Digest != "" {
		return img.Digest != "" && ref.Digest == img.Digest
	}
	want := img.Ref.Tag
	if want == "" {
		want = img.Resource.Version
	}
	tag := ref.Tag
	if tag == "" {
		tag = "latest"
	}
	return want != "" && tag == want
}
