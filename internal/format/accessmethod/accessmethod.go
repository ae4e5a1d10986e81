// Package accessmethod is the one table of OCM access methods: per access
// type, its canonical name and other spellings, where its content lives, the
// fields that locate it, and the digest normalisations that can name it.
//
// Adding an access type is an entry in methods (and, for content the plugin
// reads, an opener in the reading package's own table: internal/source/ocm/oci).
// The package imports nothing of the model, so that ocm can take its
// names and spellings from here (ocm.Access.Kind) without an import cycle;
// code that opens content keeps its open functions next to it, keyed by
// Method.Name.
package accessmethod

import (
	"fmt"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

// Canonical access type names (without the optional "/v1" suffix);
// ocm exports them as ocm.AccessLocalBlob and so on.
const (
	LocalBlob            = "localBlob"
	LocalFilesystemBlob  = "localFilesystemBlob"
	OCIArtifact          = "ociArtifact"
	OCIBlob              = "ociBlob"
	RelativeOCIReference = "relativeOciReference"
	Helm                 = "helm"
	None                 = "none"
)

// Digest normalisations of resource digests.
const (
	GenericBlobDigest = "genericBlobDigest/v1" // SHA of the blob's bytes
	OCIArtifactDigest = "ociArtifactDigest/v1" // the OCI manifest digest
)

// Where the content of an access lives.
type Where int

const (
	// Unknown: not an access type of the table (the zero Method).
	Unknown Where = iota
	// Local: the component version's own store (CTF, registry, archive).
	Local
	// Remote: a registry or Helm repository outside the version's store.
	Remote
	// NoContent: the access names no content (type none).
	NoContent
)

// Method is what the plugin knows of one access type.
type Method struct {
	// Name is the canonical type name, what ocm.Access.Kind returns.
	Name string
	// Aliases are the other names of the type. Every spelling is matched
	// case-insensitively with its "/vN" suffix removed: the OCM CLI writes
	// LocalBlob/v1, OCIImage/v1 and ociArtifact/v1 alike.
	Aliases []string
	Where   Where
	// LocalRef is the field naming a local blob in the version's store.
	LocalRef string
	// Layer: the local blob is a layer (or index entry) of the version's
	// OCI manifest, as in a CTF or a registry; a component archive's
	// legacy localFilesystemBlob is a file of its blobs directory instead.
	Layer bool
	// GlobalAccess: the access may carry a globalAccess, where a registry
	// holds the same blob (read when the local store lacks it).
	GlobalAccess bool
	// ImageRef is the field holding an absolute image reference, for an
	// access that locates an image in a registry; "" when it has none.
	ImageRef string
	// Artifact: the access names an OCI artifact by reference
	// (imageReference, or reference relative to the version's registry),
	// which a transfer copies by digest.
	Artifact bool
	// Digests are the normalisations that can name the content. An OCI
	// artifact is named by its manifest: ociArtifactDigest/v1, or
	// genericBlobDigest/v1 of the manifest as the OCM CLI v0.13+ writes it;
	// a local blob holding an artifact set or manifest by
	// ociArtifactDigest/v1 too.
	Digests []string
}

// methods is every access type the plugin knows, in the order messages
// name them.
var methods = []Method{
	{Name: LocalBlob, Where: Local, LocalRef: "localReference", Layer: true, GlobalAccess: true,
		Digests: []string{GenericBlobDigest, OCIArtifactDigest}},
	{Name: LocalFilesystemBlob, Where: Local, LocalRef: "fileName", GlobalAccess: true,
		Digests: []string{GenericBlobDigest, OCIArtifactDigest}},
	{Name: OCIArtifact, Aliases: []string{"ociRegistry", "ociImage"}, Where: Remote, ImageRef: "imageReference", Artifact: true,
		Digests: []string{OCIArtifactDigest, GenericBlobDigest}},
	{Name: RelativeOCIReference, Where: Remote, Artifact: true,
		Digests: []string{OCIArtifactDigest, GenericBlobDigest}},
	{Name: Helm, Where: Remote, Digests: []string{GenericBlobDigest}},
	{Name: OCIBlob, Aliases: []string{"ociImageLayer"}, Where: Remote, Digests: []string{GenericBlobDigest}},
	{Name: None, Where: NoContent},
}

// byLower indexes methods by every lower-case spelling.
var byLower = func() map[string]int {
	m := map[string]int{}
	for i, am := range methods {
		for _, n := range append([]string{am.Name}, am.Aliases...) {
			k := strings.ToLower(n)
			if _, dup := m[k]; dup {
				panic("accessmethod: " + n + " names two access types")
			}
			m[k] = i
		}
	}
	return m
}()

// trim removes the version suffix ("/v1") of an access type.
func trim(typ string) string {
	if i := strings.LastIndex(typ, "/"); i >= 0 {
		return typ[:i]
	}
	return typ
}

// Canonical returns the canonical name of an access type for any accepted
// spelling, version suffix removed; unknown types come back as written,
// without the suffix.
func Canonical(typ string) string {
	t := trim(typ)
	if i, ok := byLower[strings.ToLower(t)]; ok {
		return methods[i].Name
	}
	return t
}

// Lookup returns the method of an access type in any accepted spelling;
// the zero Method (Where Unknown) and false when the table lacks it.
func Lookup(typ string) (Method, bool) {
	if i, ok := byLower[strings.ToLower(trim(typ))]; ok {
		return methods[i], true
	}
	return Method{}, false
}

// Names returns the names of the methods for which keep is true, in table
// order; all of them when keep is nil.
func Names(keep func(Method) bool) []string {
	var out []string
	for _, m := range methods {
		if keep == nil || keep(m) {
			out = append(out, m.Name)
		}
	}
	return out
}

// Unsupported is the error for an access type, as written, that a reader
// does not read; the supported ones are those for which keep is true.
func Unsupported(typ string, keep func(Method) bool) error {
	return fmt.Errorf("%w %s (supported: %s)", errdef.ErrUnsupportedAccess, errdef.Quote(typ), strings.Join(Names(keep), ", "))
}

// Readable reports whether the plugin reads content of m: it lives in the
// version's store or outside it.
func Readable(m Method) bool { return m.Where == Local || m.Where == Remote }
