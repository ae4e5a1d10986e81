package kustomize

import (
	"bytes"
	"encoding/base64"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"

	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

// Overlay is configuration that kustomize itself applies: the plugin writes
// it as a kustomization whose only resource is the entry directory and
// builds that, exactly as a hand-written overlay over the shipped tree
// (kustomize build of the same overlay gives the same output). So a merged
// ConfigMap gets a new hash suffix and its references follow, images are
// set by name, and patches target by kind, name, namespace or selector.
//
// Everything is inline: the overlay references no file (a patch is given as
// text, a generator by literals) and no directory but the entry and
// components of the tree, so it can reach nothing the tree does not hold.
type Overlay struct {
	Namespace          string
	NamePrefix         string
	NameSuffix         string
	Labels             []types.Label
	CommonAnnotations  map[string]string
	Images             []types.Image
	Replicas           []types.Replica
	Patches            []types.Patch         // inline (Patch), never Path
	ConfigMapGenerator []types.ConfigMapArgs // literals only; behavior merge/replace/create
	// SecretGenerator is literals only, like ConfigMapGenerator. Its values
	// end up in the output as kustomize writes them (base64 data of a
	// Secret): they are the Application's own, as in a hand-written overlay;
	// nothing else (--explain, logs, errors) shows them.
	SecretGenerator []types.SecretArgs
	// Components are directories of the tree (tree-relative, as the entry
	// path), each a kustomization of kind Component, applied in order.
	Components []string
	// SetEntryNames: NamePrefix and NameSuffix replace the entry
	// kustomization's own instead of adding to them, as Argo CD's
	// kustomize.namePrefix (`kustomize edit set nameprefix`) and Flux's
	// Kustomization namePrefix do.
	SetEntryNames bool
}

// WithOverlay builds ov over the entry directory instead of the entry
// itself. A nil overlay is none.
func WithOverlay(ov *Overlay) Option {
	return func(o *options) { o.overlay = ov }
}

// With an overlay, kustomize sees two top-level directories: the tree under
// mountTree (or the Application's directory under mountApp, see
// WithApplicationOverlay) and the generated overlay under overlayDir. The
// overlay cannot sit inside the tree: kustomize refuses a base (the tree's
// root, for the root entry) that contains the kustomization naming it.
const (
	overlayDir = "overlay"
	mountTree  = "resource"
	mountApp   = "app"
)

// check refuses what the overlay must not hold: file references, unknown
// generator behaviours, components outside the tree. Messages name
// generators, never their values.
func (ov *Overlay) check() error {
	for i, p := range ov.Patches {
		if p.Path != "" {
			return fail(errdef.ErrInvalidInput, "kustomize: overlay patch %d names a file (%s); give the patch inline", i, errdef.Quote(p.Path))
		}
		if p.Patch == "" {
			return fail(errdef.ErrInvalidInput, "kustomize: overlay patch %d is empty", i)
		}
	}
	generators := func(field string, g types.GeneratorArgs) error {
		if len(g.FileSources) > 0 || len(g.EnvSources) > 0 || g.EnvSource != "" {
			return fail(errdef.ErrInvalidInput, "kustomize: overlay %s %s reads files; give literals", field, errdef.Quote(g.Name))
		}
		switch g.Behavior {
		case "", "create", "merge", "replace":
		default:
			return fail(errdef.ErrInvalidInput, "kustomize: overlay %s %s: behavior %s is not create, merge or replace", field, errdef.Quote(g.Name), errdef.Quote(g.Behavior))
		}
		return nil
	}
	for _, g := range ov.ConfigMapGenerator {
		if err := generators("configMapGenerator", g.GeneratorArgs); err != nil {
			return err
		}
	}
	for _, g := range ov.SecretGenerator {
		if err := generators("secretGenerator", g.GeneratorArgs); err != nil {
			return err
		}
		// kustomize's own message for a bad literal quotes it whole.
		for i, l := range g.LiteralSources {
			if k, _, ok := strings.Cut(l, "="); !ok || !secretKeyRE().MatchString(k) {
				return fail(errdef.ErrInvalidInput, "kustomize: overlay secretGenerator %s: literal %d is not KEY=VALUE with a key of [-._a-zA-Z0-9]", errdef.Quote(g.Name), i)
			}
		}
	}
	for _, c := range ov.Components {
		if _, err := cleanEntry(c); err != nil || c == "" {
			return fail(errdef.ErrInvalidInput, "kustomize: overlay component %s is not a directory inside the resource", errdef.Quote(c))
		}
	}
	return nil
}

// secretKeyRE is what Kubernetes accepts as a Secret data key.
var secretKeyRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[-._a-zA-Z0-9]+$`) })

// secrets are the values of ov's secret literals, as given and as
// kustomize encodes them, longest first: scrubbed from build errors.
func (ov *Overlay) secrets() []string {
	if ov == nil {
		return nil
	}
	var out []string
	for _, g := range ov.SecretGenerator {
		for _, l := range g.LiteralSources {
			if _, v, ok := strings.Cut(l, "="); ok && v != "" {
				out = append(out, v, base64.StdEncoding.EncodeToString([]byte(v)))
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// scrub replaces every secret of ov in msg.
func (ov *Overlay) scrub(msg string) string {
	for _, s := range ov.secrets() {
		msg = strings.ReplaceAll(msg, s, "(secret value)")
	}
	return msg
}

// editEntry is the entry kustomization (kfile, its path in tfs) with the
// overlay's name prefix and suffix set in place of its own; ok false when
// the overlay sets neither.
func (ov *Overlay) editEntry(tfs fs.FS, kfile string) (data []byte, ok bool, err error) {
	if !ov.SetEntryNames || ov.NamePrefix == "" && ov.NameSuffix == "" {
		return nil, false, nil
	}
	raw, err := fs.ReadFile(tfs, kfile)
	if err != nil {
		return nil, false, fail(errdef.ErrInvalidInput, "kustomize: %s: %s", kfile, errdef.OneLine(err.Error()))
	}
	var k map[string]any
	if err := yaml.Unmarshal(raw, &k); err != nil || k == nil {
		return nil, false, fail(errdef.ErrInvalidInput, "kustomize: %s is not a kustomization to set the name prefix in", kfile)
	}
	if ov.NamePrefix != "" {
		k["namePrefix"] = ov.NamePrefix
	}
	if ov.NameSuffix != "" {
		k["nameSuffix"] = ov.NameSuffix
	}
	data, err = yaml.Marshal(k)
	return data, err == nil, err
}

// editedFS is fsys with the file name's content replaced by data.
type editedFS struct {
	fs.FS
	name string
	data []byte
}

func (e editedFS) Open(name string) (fs.File, error) {
	if name == e.name {
		base, err := fs.Stat(e.FS, name)
		if err != nil {
			return nil, err
		}
		return &memFile{Reader: bytes.NewReader(e.data), info: mountInfo{name: base.Name(), size: int64(len(e.data))}}, nil
	}
	return e.FS.Open(name)
}

func (e editedFS) Stat(name string) (fs.FileInfo, error) {
	if name == e.name {
		base, err := fs.Stat(e.FS, name)
		if err != nil {
			return nil, err
		}
		return mountInfo{name: base.Name(), size: int64(len(e.data))}, nil
	}
	return fs.Stat(e.FS, name)
}

func (e editedFS) ReadDir(name string) ([]fs.DirEntry, error) { return fs.ReadDir(e.FS, name) }

// kustomization is ov as a kustomization whose resource is base (a path
// relative to overlayDir) and whose components are ov's, relative to tree
// (the tree's directory, relative to overlayDir).
func (ov *Overlay) kustomization(base, tree string) ([]byte, error) {
	if err := ov.check(); err != nil {
		return nil, err
	}
	k := ov.Kustomization(base, func(c string) string {
		clean, _ := cleanEntry(c)
		return path.Join(tree, clean)
	})
	if ov.SetEntryNames {
		k.NamePrefix, k.NameSuffix = "", "" // set in the entry (editEntry)
	}
	return yaml.Marshal(k)
}

// Kustomization is ov as the kustomization built over base (its one
// resource), each of ov's components named as component names it: the one
// translation of an overlay, for the render and for --explain alike.
func (ov *Overlay) Kustomization(base string, component func(dir string) string) types.Kustomization {
	var components []string
	for _, c := range ov.Components {
		components = append(components, component(c))
	}
	return types.Kustomization{
		TypeMeta:           types.TypeMeta{APIVersion: types.KustomizationVersion, Kind: types.KustomizationKind},
		Resources:          []string{base},
		Components:         components,
		Namespace:          ov.Namespace,
		NamePrefix:         ov.NamePrefix,
		NameSuffix:         ov.NameSuffix,
		Labels:             ov.Labels,
		CommonAnnotations:  ov.CommonAnnotations,
		Images:             ov.Images,
		Replicas:           ov.Replicas,
		Patches:            ov.Patches,
		ConfigMapGenerator: ov.ConfigMapGenerator,
		SecretGenerator:    ov.SecretGenerator,
	}
}
