package argocdocm

import (
	"errors"
	"reflect"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/finish/imageguard"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// origins remembers which step's resource rendered each object, so that a
// refusal names it; objects are maps, and post-processors change them in
// place, so their identity survives post-processing.
type origins map[uintptr]string

func (o origins) add(objs []manifests.Object, resource string) {
	if o == nil {
		return
	}
	for _, obj := range objs {
		o[reflect.ValueOf(obj).Pointer()] = resource
	}
}

// guardImages is the last finishing step: after localisation, patches and
// hooks, every workload image must be an image resource of cv (package
// imageguard). Only signed digests count when signatures were verified.
func (r *Renderer) guardImages(cv ocm.ComponentVersion, objs []manifests.Object, signed bool, from origins, ectx *errdef.Error) error {
	var opts []imageguard.Option
	if signed {
		opts = append(opts, imageguard.SignedDigestsOnly())
	}
	err := imageguard.New(cv.Descriptor(), opts...).Check(objs)
	var v *imageguard.Violation
	if errors.As(err, &v) && v.Index < len(objs) {
		ectx.Resource = from[reflect.ValueOf(objs[v.Index]).Pointer()]
	}
	return err
}
