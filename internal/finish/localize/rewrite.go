package localize

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/imageref"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/fieldpath"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// Change is one container image found in the rendered workloads.
type Change struct {
	Object    string // "Deployment shop/api" (kind namespace/name)
	Container string // "containers[api]", "initContainers[migrate]", …
	Path      string // field path of the image in the object
	From      string // the image as rendered
	To        string // the image written, "" when left alone
	Resource  string // identity of the matching image resource, "" when none
	Note      string // why the image was left alone
}

// Rewritten reports whether the image was changed.
func (c Change) Rewritten() bool { return c.To != "" && c.To != c.From }

func (c Change) String() string {
	where := c.Object + " " + c.Container
	switch {
	case c.Rewritten():
		return fmt.Sprintf("%s: %s -> %s (resource %s)", where, c.From, c.To, c.Resource)
	case c.Resource != "":
		return fmt.Sprintf("%s: %s already is the location of resource %s", where, c.From, c.Resource)
	default:
		return fmt.Sprintf("%s: %s left as is: %s", where, c.From, c.Note)
	}
}

// podSpecPaths are where workload kinds keep their pod spec.
var podSpecPaths = map[string]struct {
	groups []string // API groups ("" = core)
	path   fieldpath.Path
}{
	"Pod":                   {[]string{""}, fieldpath.Key("spec")},
	"PodTemplate":           {[]string{""}, fieldpath.Key("template", "spec")},
	"ReplicationController": {[]string{""}, fieldpath.Key("spec", "template", "spec")},
	"Deployment":            {[]string{"apps", "extensions"}, fieldpath.Key("spec", "template", "spec")},
	"StatefulSet":           {[]string{"apps"}, fieldpath.Key("spec", "template", "spec")},
	"DaemonSet":             {[]string{"apps", "extensions"}, fieldpath.Key("spec", "template", "spec")},
	"ReplicaSet":            {[]string{"apps", "extensions"}, fieldpath.Key("spec", "template", "spec")},
	"Job":                   {[]string{"batch"}, fieldpath.Key("spec", "template", "spec")},
	"CronJob":               {[]string{"batch"}, fieldpath.Key("spec", "jobTemplate", "spec", "template", "spec")},
	// An Argo Rollout keeps a Deployment's pod template (none with workloadRef,
	// which points at a Deployment that is checked on its own).
	"Rollout": {[]string{"argoproj.io"}, fieldpath.Key("spec", "template", "spec")},
}

var containerFields = []string{"initContainers", "containers", "ephemeralContainers"}

// PodSpecPath returns where an object keeps its pod spec, if it is a workload.
func PodSpecPath(o manifests.Object) (fieldpath.Path, bool) {
	kind, _ := o["kind"].(string)
	apiVersion, _ := o["apiVersion"].(string)
	w, ok := podSpecPaths[kind]
	if !ok {
		return nil, false
	}
	group := ""
	if g, _, found := strings.Cut(apiVersion, "/"); found {
		group = g
	}
	for _, g := range w.groups {
		if g == group {
			return w.path, true
		}
	}
	return nil, false
}

// Describe names an object as "Kind namespace/name".
func Describe(o manifests.Object) string {
	kind, _ := o["kind"].(string)
	md, _ := o["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	if ns, _ := md["namespace"].(string); ns != "" {
		name = ns + "/" + name
	}
	return kind + " " + name
}

// Rewrite rewrites, in place, every container, init container and ephemeral
// container image of the workloads in objs that matches an image resource
// (see Match) to the component's location of that image, exactly as its
// reference states it, pinned by digest when the component knows it. Images that match nothing are left alone and
// reported with a note. It fails only on an ambiguous match.
func Rewrite(objs []manifests.Object, images []Image) ([]Change, error) {
	var changes []Change
	for _, o := range objs {
		specPath, ok := PodSpecPath(o)
		if !ok {
			continue
		}
		spec, ok := fieldpath.Get(o, specPath)
		if !ok {
			continue
		}
		specMap, ok := spec.(map[string]any)
		if !ok {
			continue
		}
		for _, field := range containerFields {
			list, _ := specMap[field].([]any)
			for i, c := range list {
				cm, ok := c.(map[string]any)
				if !ok {
					continue
				}
				image, ok := cm["image"].(string)
				if !ok || image == "" {
					continue
				}
				name, _ := cm["name"].(string)
				ch := Change{
					Object:    Describe(o),
					Container: fmt.Sprintf("%s[%s]", field, name),
					Path:      specPath.Child(field).Index(i).Child("image").String(),
					From:      image,
				}
				to, res, note, err := localise(image, images)
				if err != nil {
					return nil, fmt.Errorf("%s %s: %w", ch.Object, ch.Container, err)
				}
				ch.Resource, ch.Note = res, note
				if to != "" {
					ch.To = to
					cm["image"] = to
				}
				changes = append(changes, ch)
			}
		}
	}
	return changes, nil
}

// localise returns the new image ("" to leave it), the matching resource and a note.
func localise(image string, images []Image) (string, string, string, error) {
	ref, err := imageref.Parse(image)
	if err != nil {
		return "", "", "not a valid image reference: " + err.Error(), nil
	}
	img, err := Match(images, ref)
	if err != nil {
		return "", "", "", err
	}
	if img == nil {
		return "", "", "no image resource of the component matches it", nil
	}
	// The reference exactly as the component states it (after a transfer:
	// as the transferred descriptor states it), pinned by the resource
	// digest when it pins none. Nothing from the rendered reference is kept:
	// its tag may be the chart's appVersion, which the component's
	// reference need not have, and a digest-only rendering of a tag@digest
	// reference is still not what the component says.
	to := img.Location()
	if ref == to {
		return image, img.Identity(), "", nil
	}
	return to.String(), img.Identity(), "", nil
}

// Unmatched returns the changes that left an image alone because no image
// resource matches it.
func Unmatched(changes []Change) []Change {
	var out []Change
	for _, c := range changes {
		if c.Resource == "" {
			out = append(out, c)
		}
	}
	return out
}

// Run rewrites objs with the image resources of d (see Rewrite), logs the
// images left alone and, with requireAll, fails when there are any.
func Run(d *ocm.Descriptor, objs []manifests.Object, requireAll bool, log io.Writer) ([]Change, error) {
	images, notes := Images(d)
	changes, err := Rewrite(objs, images)
	if err != nil {
		return nil, fmt.Errorf("automatic localisation: %w", err)
	}
	unmatched := Unmatched(changes)
	if log != nil {
		for _, n := range notes {
			fmt.Fprintf(log, "argocd-ocm-plugin: automatic localisation: %s\n", n)
		}
		for _, c := range unmatched {
			fmt.Fprintf(log, "argocd-ocm-plugin: automatic localisation: %s\n", c)
		}
	}
	if requireAll && len(unmatched) > 0 {
		var imgs []string
		for _, c := range unmatched {
			imgs = append(imgs, c.From+" ("+c.Object+" "+c.Container+")")
		}
		sort.Strings(imgs)
		return nil, fmt.Errorf("%w: automatic localisation requires every image to be a resource of the component; %d are not: %s",
			errdef.ErrInvalidInput, len(imgs), strings.Join(imgs, ", "))
	}
	return changes, nil
}
