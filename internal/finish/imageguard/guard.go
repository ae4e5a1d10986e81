package imageguard

import (
	"fmt"
	"sort"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/finish/localize"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/imageref"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/fieldpath"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// MaxDepth bounds how deep objects are searched; deeper nesting is refused
// (no Kubernetes object comes near it).
const MaxDepth = 256

// Guard knows the images one component version declares. Build it with New.
type Guard struct {
	signedOnly bool
	images     int               // image resources of the component
	digests    map[string]string // digest → resource identity
	refs       map[string]string // registry/repository:tag → resource identity
	// unsigned are the references by tag that SignedDigestsOnly does not
	// count, for a precise message.
	unsigned map[string]string
}

// Option configures a Guard.
type Option func(*Guard)

// SignedDigestsOnly counts only resource digests (ociArtifactDigest/v1),
// which a component signature covers, and not access references, which it
// does not. Default: off (the whole descriptor is trusted as its repository
// is). Set it when the component's signatures were verified.
func SignedDigestsOnly() Option { return func(g *Guard) { g.signedOnly = true } }

// New collects the images component descriptor d declares.
func New(d *ocm.Descriptor, opts ...Option) *Guard {
	g := &Guard{digests: map[string]string{}, refs: map[string]string{}, unsigned: map[string]string{}}
	for _, o := range opts {
		o(g)
	}
	for i := range d.Resources {
		res := &d.Resources[i]
		if !localize.IsImage(res) {
			continue
		}
		g.images++
		id := res.Identity().String()
		if dg := resourceDigest(res); dg != "" {
			g.digests[dg] = id
		}
		img, err := localize.ImageOf(res)
		if err != nil {
			continue // no registry location: only its resource digest can vouch for it
		}
		refs := g.refs
		if g.signedOnly {
			refs = g.unsigned
		} else if img.Ref.Digest != "" {
			g.digests[img.Ref.Digest] = id
		}
		for _, tag := range tagsOf(img.Ref, res.Version) {
			refs[refKey(img.Ref, tag)] = id
		}
	}
	return g
}

// resourceDigest is the manifest digest the resource digest names, "" when
// it names none.
func resourceDigest(res *ocm.Resource) string {
	d := res.Digest
	if d == nil || d.NormalisationAlgorithm != "ociArtifactDigest/v1" || d.Value == "" {
		return ""
	}
	alg := strings.ToLower(strings.ReplaceAll(d.HashAlgorithm, "-", ""))
	if alg == "" {
		alg = "sha256"
	}
	return alg + ":" + d.Value
}

// tagsOf are the tags by which a component reference may be deployed.
func tagsOf(r imageref.Reference, version string) []string {
	switch {
	case r.Tag != "":
		return []string{r.Tag}
	case r.Digest != "":
		return nil // pinned by digest only: no tag stands for it
	case version != "" && version != "latest":
		return []string{"latest", version}
	default:
		return []string{"latest"}
	}
}

func refKey(r imageref.Reference, tag string) string {
	if tag == "" {
		tag = "latest"
	}
	return strings.ToLower(r.Registry) + "/" + r.Repository + ":" + tag
}

// Violation is an image (or an object) the guard refuses.
type Violation struct {
	Index     int    // of the object in the checked slice
	Object    string // "Deployment shop/api"
	Container string // "containers[miner]", "volumes[data]"; "" for the object itself
	Path      string // field path of the image in the object
	Image     string // the image as rendered (capped), "" when not a string
	Reason    string
	More      int // further violations in the same output
}

func (v *Violation) Error() string {
	var b strings.Builder
	b.WriteString(errdef.ErrNotAllowed.Error())
	b.WriteString(": image origin guard: ")
	b.WriteString(v.Object)
	if v.Container != "" {
		b.WriteString(" " + v.Container)
	}
	if v.Path != "" {
		b.WriteString(" (" + v.Path + ")")
	}
	b.WriteString(": ")
	if v.Image != "" {
		b.WriteString("image " + v.Image + " ")
	}
	b.WriteString(v.Reason)
	if v.More > 0 {
		fmt.Fprintf(&b, " (and %d more refused)", v.More)
	}
	return b.String()
}

// Unwrap makes a Violation an errdef.ErrNotAllowed.
func (v *Violation) Unwrap() error { return errdef.ErrNotAllowed }

// Check returns the first Violation in objs (with the count of the others),
// or nil when every workload image is one of the component's.
func (g *Guard) Check(objs []manifests.Object) error {
	vs := g.Violations(objs)
	if len(vs) == 0 {
		return nil
	}
	v := vs[0]
	v.More = len(vs) - 1
	return &v
}

// Violations returns every violation in objs, in object order.
func (g *Guard) Violations(objs []manifests.Object) []Violation {
	var out []Violation
	seen := map[string]string{} // image → refusal; charts repeat their images
	for i, o := range objs {
		s := scan{g: g, index: i, obj: o, seen: seen}
		s.object()
		out = append(out, s.found...)
	}
	return out
}

// scan walks one object.
type scan struct {
	g     *Guard
	index int
	obj   manifests.Object
	seen  map[string]string
	stack []fieldpath.Elem
	found []Violation
}

// Lists and maps, outside the known pod specs, whose entries are containers.
var (
	containerLists = []string{"initContainers", "containers", "ephemeralContainers", "sidecars", "steps"}
	containerMaps  = []string{"container", "script"}
	podSpecLists   = []string{"initContainers", "containers", "ephemeralContainers"}
)

func (s *scan) object() {
	kind, _ := s.obj["kind"].(string)
	group, _, _ := strings.Cut(fmt.Sprint(s.obj["apiVersion"]), "/")
	switch {
	case group == "argoproj.io" && (kind == "Application" || kind == "ApplicationSet"):
		s.add("", "", "", "is an Argo CD "+kind+": what it deploys comes from another source, whose images the guard cannot check; a component's output may not create one")
		return
	case group == "apiextensions.k8s.io" && kind == "CustomResourceDefinition":
		return
	}
	var known fieldpath.Path
	if p, ok := localize.PodSpecPath(s.obj); ok {
		known = p
		if spec, ok := fieldpath.Get(s.obj, p); ok {
			m, isMap := spec.(map[string]any)
			if !isMap {
				s.stack = append(s.stack[:0], p...)
				s.add("", "", "", "has a pod spec at "+p.String()+" that is not a map")
				return
			}
			s.stack = append(s.stack[:0], p...)
			s.podSpec(m, true)
		}
	}
	s.stack = s.stack[:0]
	s.walk(map[string]any(s.obj), known, 0)
}

// walk searches v for containers outside the known pod spec.
func (s *scan) walk(v any, known fieldpath.Path, depth int) {
	if depth > MaxDepth {
		s.add("", "", "", fmt.Sprintf("nests deeper than %d levels", MaxDepth))
		return
	}
	switch v := v.(type) {
	case map[string]any:
		if known != nil && len(s.stack) == len(known) && fieldpath.Path(s.stack).HasPrefix(known) {
			return // checked strictly
		}
		// Checked here, and walked into too: entries can nest more (an Argo
		// Workflows step with an inline template); a container holds no
		// containers, so nothing is reported twice.
		isPodSpec := false
		for _, f := range podSpecLists {
			if _, ok := v[f].([]any); ok {
				isPodSpec = true
			}
		}
		if isPodSpec {
			s.podSpec(v, false)
		}
		for _, f := range containerLists {
			if list, ok := v[f].([]any); ok && !(isPodSpec && contains(podSpecLists, f)) {
				s.containers(f, list, false)
			}
		}
		for _, f := range containerMaps {
			if c, ok := v[f].(map[string]any); ok {
				if _, has := c["image"]; has {
					s.push(fieldpath.Elem{Key: f})
					s.container(f, c, false)
					s.pop()
				}
			}
		}
		// Sorted, so that the first violation reported is always the same.
		keys := make([]string, 0, len(v))
		for k, e := range v {
			switch e.(type) {
			case map[string]any, []any: // only these can hold containers
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			s.push(fieldpath.Elem{Key: k})
			s.walk(v[k], known, depth+1)
			s.pop()
		}
	case []any:
		for i, e := range v {
			s.push(fieldpath.Elem{IsList: true, Index: i})
			s.walk(e, known, depth+1)
			s.pop()
		}
	}
}

// podSpec checks the containers and image volumes of a pod spec at s.stack.
func (s *scan) podSpec(spec map[string]any, strict bool) {
	for _, f := range podSpecLists {
		v, present := spec[f]
		if !present || v == nil {
			continue
		}
		list, ok := v.([]any)
		if !ok {
			if strict {
				s.push(fieldpath.Elem{Key: f})
				s.add(f, "", "", "is not a list")
				s.pop()
			}
			continue
		}
		s.containers(f, list, strict)
	}
	vols, _ := spec["volumes"].([]any)
	for i, vol := range vols {
		vm, ok := vol.(map[string]any)
		if !ok {
			continue
		}
		im, ok := vm["image"].(map[string]any)
		if !ok {
			continue
		}
		name, _ := vm["name"].(string)
		s.push(fieldpath.Elem{Key: "volumes"}, fieldpath.Elem{IsList: true, Index: i}, fieldpath.Elem{Key: "image"}, fieldpath.Elem{Key: "reference"})
		s.image(fmt.Sprintf("volumes[%s]", errdef.Field(name)), im["reference"], strict)
		s.pop()
		s.pop()
		s.pop()
		s.pop()
	}
}

// containers checks a list of containers named field at s.stack.
func (s *scan) containers(field string, list []any, strict bool) {
	s.push(fieldpath.Elem{Key: field})
	defer s.pop()
	for i, c := range list {
		s.push(fieldpath.Elem{IsList: true, Index: i})
		cm, ok := c.(map[string]any)
		switch {
		case ok:
			name, _ := cm["name"].(string)
			s.container(fmt.Sprintf("%s[%s]", field, errdef.Field(name)), cm, strict)
		case strict:
			s.add(fmt.Sprintf("%s[%d]", field, i), "", "", "is not a container (a map)")
		}
		s.pop()
	}
}

// container checks one container map at s.stack.
func (s *scan) container(label string, c map[string]any, strict bool) {
	v, present := c["image"]
	if !present {
		return // the API server refuses a container without an image
	}
	if _, isString := v.(string); !isString && !strict {
		return
	}
	s.push(fieldpath.Elem{Key: "image"})
	s.image(label, v, strict)
	s.pop()
}

// image checks one image value at s.stack.
func (s *scan) image(label string, v any, strict bool) {
	image, ok := v.(string)
	if !ok {
		if strict && v != nil {
			s.add(label, "", "", "has an image that is not a string")
		}
		return
	}
	if image == "" {
		return // nothing to pull; the API server refuses it
	}
	reason, ok := s.seen[image]
	if !ok {
		reason = s.g.refuse(image)
		s.seen[image] = reason
	}
	if reason != "" {
		s.add(label, errdef.Quote(image), s.path(), reason)
	}
}

// refuse returns why image is not one of the component's, "" when it is.
func (g *Guard) refuse(image string) string {
	if strings.Contains(image, "://") {
		return "is not a valid image reference (a runtime takes no scheme)"
	}
	ref, err := imageref.Parse(image)
	if err != nil {
		return "is not a valid image reference"
	}
	none := ""
	if g.images == 0 {
		none = "; the component declares no image resources (ociImage/ociArtifact), so the guard refuses every workload image"
	}
	if ref.Digest != "" {
		if _, ok := g.digests[ref.Digest]; ok {
			return ""
		}
		return "is not an image resource of the component: none has the digest " + errdef.Quote(ref.Digest) + none
	}
	key := refKey(ref, ref.Tag)
	if _, ok := g.refs[key]; ok {
		return ""
	}
	if id, ok := g.unsigned[key]; ok {
		return "names image resource " + errdef.Quote(id) + " by tag, which the component's signature does not cover (it covers digests only): pin it by digest (automatic localisation does)"
	}
	return "is not an image resource of the component: none has the reference " + errdef.Quote(key) +
		" (by tag, an image must be exactly the reference of one; by digest, it must have the digest of one)" + none
}

func (s *scan) push(e ...fieldpath.Elem) { s.stack = append(s.stack, e...) }
func (s *scan) pop()                     { s.stack = s.stack[:len(s.stack)-1] }

func (s *scan) path() string {
	return errdef.Field(fieldpath.Path(append([]fieldpath.Elem(nil), s.stack...)).String())
}

func (s *scan) add(label, image, path, reason string) {
	if path == "" && len(s.stack) > 0 {
		path = s.path()
	}
	s.found = append(s.found, Violation{Index: s.index, Object: describe(s.obj), Container: label, Path: path, Image: image, Reason: reason})
}

// describe names an object as "Kind namespace/name", capped.
func describe(o manifests.Object) string {
	return errdef.Field(localize.Describe(o))
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
