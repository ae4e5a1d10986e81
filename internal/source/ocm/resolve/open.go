package resolve

import (
	"errors"
	"fmt"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/ctf"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/oci"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// Open opens the repository a spec names (see oci.ParseSpec): an OCI
// registry (*oci.Repository) or a CTF / component archive (package ctf).
// opts apply to OCI registries only. The dispatch lives here, above both
// kinds, so that neither repository package knows the other.
func Open(spec string, opts ...oci.Option) (ocm.Repository, error) {
	sp, err := oci.ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	if sp.Type == oci.TypeCTF {
		r, err := ctf.Open(sp.FilePath)
		if errors.Is(err, errdef.ErrNotFound) && sp.FilePath == strings.TrimSpace(spec) {
			// A bare name: say why it was not taken for a registry.
			return nil, fmt.Errorf("%w (%s)", err, oci.RegistryHint)
		}
		return r, err
	}
	return oci.New(sp, opts...)
}
