package kustomize

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/archive"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
)

// memRoot is where the tree sits in kustomize's in-memory file system, so
// kustomize's own messages show paths as "/overlays/prod/…".
const memRoot = "/"

// builds lets kustomize builds run at once, except one with a custom OpenAPI
// schema (a kustomization's openapi field): kustomize keeps the schema in
// process-global variables (kubernetes-sigs/kustomize#4824), so such a
// build runs alone. Waiting ends with the build's context: no tenant's
// build can hold another's past its deadline. (The render server's workers
// render one generation at a time, so they never wait here.)
var builds = newGate(64)

// gate is a readers-writer lock whose waits end with a context.
type gate struct {
	tokens    chan struct{}
	exclusive chan struct{}
}

func newGate(n int) *gate {
	return &gate{tokens: make(chan struct{}, n), exclusive: make(chan struct{}, 1)}
}

// acquire takes one token (shared) or all of them (alone); the returned
// func gives them back.
func (g *gate) acquire(ctx context.Context, alone bool) (func(), error) {
	if !alone {
		select {
		case g.tokens <- struct{}{}:
			return func() { <-g.tokens }, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	select {
	case g.exclusive <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	held := 0
	release := func() {
		for range held {
			<-g.tokens
		}
		<-g.exclusive
	}
	for held < cap(g.tokens) {
		select {
		case g.tokens <- struct{}{}:
			held++
		case <-ctx.Done():
			release()
			return nil, ctx.Err()
		}
	}
	return release, nil
}

// Render builds the kustomization in the directory entryPath of tree ("."
// for the root) and returns the resulting objects, ordered as
// `kustomize build` orders them unless WithReorder says otherwise.
//
// entryPath is a slash-separated path inside the tree; it must not escape the
// tree and must name an existing directory. A directory without a
// kustomization file (kustomization.yaml, kustomization.yml or Kustomization)
// is rendered as plain manifests with manifests.Render.
//
// An empty entryPath means none was chosen (see Entry): a kustomization at
// the root is built; a tree without any kustomization is rendered as plain
// manifests; a tree whose kustomizations all lie below the root is refused
// with the entry paths found, since reading it as plain manifests would
// emit kustomizations and patches as objects.
//
// The build is CPU-bound and cannot be interrupted: when ctx ends first,
// Render returns ctx's error at once and the build finishes in the
// background, touching nothing but memory.
func Render(ctx context.Context, tree *archive.Tree, entryPath string, opts ...Option) ([]manifests.Object, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if tree == nil {
		return nil, fail(errdef.ErrInvalidInput, "kustomize: no resource tree")
	}
	o := newOptions(opts)
	if o.app != nil {
		return renderApplicationOverlay(ctx, tree, o)
	}

	tfs := tree.FS()
	entry, err := Entry(tfs, entryPath)
	if err != nil {
		return nil, err
	}
	fi, err := fs.Stat(tfs, entry)
	switch {
	case err != nil:
		return nil, fail(errdef.ErrNotFound, "kustomize: entry path %s does not exist in the resource", errdef.Quote(entryPath))
	case !fi.IsDir():
		return nil, fail(errdef.ErrInvalidInput, "kustomize: entry path %s is a file, not a directory", errdef.Quote(entryPath))
	}

	kfile, err := kustomizationFile(tfs, entry)
	if err != nil {
		return nil, err
	}
	if kfile == "" {
		if o.overlay != nil {
			return nil, fail(errdef.ErrInvalidInput, "kustomize: entry path %s holds plain manifests, no kustomization; a kustomize overlay applies to kustomizations only", errdef.Quote(entry))
		}
		return manifests.Render(tfs, entry)
	}

	if o.overlay == nil {
		return scanAndBuild(ctx, tfs, nil, entry, o)
	}
	data, err := o.overlay.kustomization(path.Join("..", mountTree, entry), path.Join("..", mountTree))
	if err != nil {
		return nil, err
	}
	if edited, ok, err := o.overlay.editEntry(tfs, kfile); err != nil {
		return nil, err
	} else if ok {
		tfs = editedFS{FS: tfs, name: kfile, data: edited}
	}
	mounts := []mountPoint{
		{at: mountTree, fsys: tfs, confined: true, what: "the resource tree"},
		{at: overlayDir, fsys: fileFS{name: konfig.DefaultKustomizationFileName(), data: data}},
	}
	return scanAndBuild(ctx, newUnion(mounts...), mounts, overlayDir, o)
}

// scanAndBuild pre-scans the kustomization in target of fsys (see scanner)
// and builds it.
func scanAndBuild(ctx context.Context, fsys fs.FS, mounts []mountPoint, target string, o options) ([]manifests.Object, error) {
	sc := newScanner(fsys)
	sc.mounts = mounts
	if err := sc.scanDir(target, false); err != nil {
		return nil, err
	}
	if err := sc.checkExpansion(target); err != nil {
		return nil, err
	}
	mem, err := inMemory(fsys)
	if err != nil {
		return nil, err
	}
	return build(ctx, mem, target, o, sc.customOpenAPI)
}

// NoEntryError is the refusal of a tree without a kustomization at its root
// but with some below it, when no entry path was chosen. It matches
// errdef.ErrInvalidInput and errdef.ErrRender; callers add how to choose.
type NoEntryError struct {
	Found []string // the kustomization directories, as KustomizationDirs orders them
}

func (e *NoEntryError) Error() string {
	list, more := e.Found, ""
	if len(list) > maxListedEntries {
		more = fmt.Sprintf(" and %d more", len(list)-maxListedEntries)
		list = list[:maxListedEntries]
	}
	return fmt.Sprintf("kustomize: no entry path given, and the resource has no kustomization at its root but %d below it (%s%s); choose one as the entry path",
		len(e.Found), strings.Join(list, ", "), more)
}

func (e *NoEntryError) Unwrap() []error { return []error{errdef.ErrInvalidInput, errdef.ErrRender} }

// maxListedEntries bounds the entry paths a refusal lists.
const maxListedEntries = 12

// Entry returns the directory Render builds for entryPath in tfs, cleaned,
// "." for the root. entryPath "" means none was chosen: "." when the root
// holds a kustomization or no directory of the tree does, and an error
// (*NoEntryError) listing the kustomization directories when they all lie
// below the root.
func Entry(tfs fs.FS, entryPath string) (string, error) {
	if entryPath != "" {
		return cleanEntry(entryPath)
	}
	if k, err := kustomizationFile(tfs, "."); err != nil || k != "" {
		return ".", err
	}
	found, err := KustomizationDirs(tfs)
	if err != nil {
		return "", fail(errdef.ErrRender, "kustomize: listing the resource tree: %v", err)
	}
	if len(found) == 0 {
		return ".", nil
	}
	return "", &NoEntryError{Found: found}
}

// KustomizationDirs lists the directories of tfs below its root that hold a
// kustomization file: first those no other kustomization of the tree names
// (the likely entries: overlays), then the rest (bases, components), each
// group sorted by depth, then name.
func KustomizationDirs(tfs fs.FS) ([]string, error) {
	recognized := map[string]bool{}
	for _, n := range konfig.RecognizedKustomizationFileNames() {
		recognized[n] = true
	}
	seen := map[string]bool{}
	var dirs []string
	err := fs.WalkDir(tfs, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !recognized[d.Name()] {
			return nil
		}
		if dir := path.Dir(p); dir != "." && !seen[dir] {
			seen[dir] = true
			dirs = append(dirs, dir)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	named := namedByOthers(tfs, dirs)
	sort.Slice(dirs, func(i, j int) bool {
		a, b := dirs[i], dirs[j]
		if named[a] != named[b] {
			return !named[a]
		}
		if da, db := strings.Count(a, "/"), strings.Count(b, "/"); da != db {
			return da < db
		}
		return a < b
	})
	return dirs, nil
}

// namedByOthers reports which of dirs another kustomization of the tree
// names as a resource or component (by a lexical reading of its lists; an
// unreadable kustomization names nothing: this only orders a message).
func namedByOthers(tfs fs.FS, dirs []string) map[string]bool {
	named := map[string]bool{}
	for _, dir := range dirs {
		kf, err := kustomizationFile(tfs, dir)
		if err != nil || kf == "" {
			continue
		}
		data, err := fs.ReadFile(tfs, kf)
		if err != nil {
			continue
		}
		var k struct {
			Resources  []string `json:"resources"`
			Bases      []string `json:"bases"`
			Components []string `json:"components"`
		}
		if yaml.Unmarshal(data, &k) != nil {
			continue
		}
		for _, r := range append(append(k.Resources, k.Bases...), k.Components...) {
			named[path.Join(dir, strings.TrimSpace(r))] = true
		}
	}
	return named
}

// cleanEntry validates entryPath and returns it cleaned, "." for the root.
func cleanEntry(entryPath string) (string, error) {
	p := entryPath
	switch {
	case strings.ContainsRune(p, 0):
		return "", fail(errdef.ErrInvalidInput, "kustomize: entry path %s contains a NUL byte", errdef.Quote(entryPath))
	case strings.ContainsRune(p, '\\'):
		return "", fail(errdef.ErrInvalidInput, "kustomize: entry path %s contains a backslash; use slashes", errdef.Quote(entryPath))
	case path.IsAbs(p) || filepath.IsAbs(p) || hasDriveLetter(p):
		return "", fail(errdef.ErrInvalidInput, "kustomize: entry path %s is absolute; give a path inside the resource", errdef.Quote(entryPath))
	}
	if p == "" {
		return ".", nil
	}
	p = path.Clean(p)
	if escapes(p) {
		return "", fail(errdef.ErrInvalidInput, "kustomize: entry path %s escapes the resource", errdef.Quote(entryPath))
	}
	return p, nil
}

// kustomizationFile returns the path of dir's kustomization file, "" when
// there is none, and an error when there are several (as kustomize does).
func kustomizationFile(fsys fs.FS, dir string) (string, error) {
	var found []string
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		p := path.Join(dir, name)
		fi, err := fs.Stat(fsys, p)
		switch {
		case err == nil && !fi.IsDir():
			found = append(found, p)
		case err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrInvalid):
			// The Application's directory refuses a name that leaves it
			// (a kustomization.yaml linking out) rather than hiding it.
			return "", fail(errdef.ErrUnsafeArchive, "kustomize: %s", errdef.OneLine(err.Error()))
		}
	}
	switch len(found) {
	case 0:
		return "", nil
	case 1:
		return found[0], nil
	default:
		return "", fail(errdef.ErrInvalidInput, "kustomize: directory %s has several kustomization files (%s); keep one", errdef.Quote(dir), errdef.Cut(strings.Join(found, ", ")))
	}
}

// inMemory gives kustomize the tree under memRoot, without copying it (see
// treeFileSystem).
func inMemory(tfs fs.FS) (filesys.FileSystem, error) {
	return newTreeFileSystem(tfs), nil
}

// build runs krusty on the in-memory file system.
// customOpenAPI says the build sets kustomize's global OpenAPI schema, which
// must then be reset for the next build.
func build(ctx context.Context, mem filesys.FileSystem, entry string, o options, customOpenAPI bool) ([]manifests.Object, error) {
	kopts := krusty.MakeDefaultOptions()
	kopts.PluginConfig = types.DisabledPluginConfig()
	kopts.LoadRestrictions = o.loadRestrictions
	kopts.Reorder = o.reorder
	kopts.AddManagedbyLabel = false

	type result struct {
		objs []manifests.Object
		err  error
	}
	release, err := builds.acquire(ctx, customOpenAPI)
	if err != nil {
		return nil, err
	}
	done := make(chan result, 1)
	go func() {
		defer release()
		objs, err := run(mem, entry, kopts, customOpenAPI)
		if err != nil && o.overlay != nil && len(o.overlay.SecretGenerator) > 0 {
			err = &scrubbed{msg: o.overlay.scrub(err.Error()), err: err}
		}
		done <- result{objs, err}
	}()
	select {
	case r := <-done:
		return r.objs, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func run(mem filesys.FileSystem, entry string, kopts *krusty.Options, customOpenAPI bool) (objs []manifests.Object, err error) {
	defer func() {
		// kustomize panics on some inputs (an invalid custom OpenAPI schema,
		// for one); a hostile archive must not crash the plugin.
		p := recover()
		if p != nil {
			objs, err = nil, fail(errdef.ErrRender, "kustomize: build of %s panicked: %v", errdef.Quote(entry), p)
		}
		// A custom schema (or a panic half-way through parsing one) would
		// otherwise stay in kustomize's globals for the next build.
		if p != nil || customOpenAPI {
			openapi.ResetOpenAPI()
		}
	}()
	resMap, err := krusty.MakeKustomizer(kopts).Run(mem, path.Join(memRoot, entry))
	if err != nil {
		return nil, fail(errdef.ErrRender, "kustomize: build of %s: %s", errdef.Quote(entry), errdef.OneLine(err.Error()))
	}
	// Each object as the JSON that `kustomize build` turns into its YAML
	// output (resMap.AsYaml is JSONToYAML of Resource.MarshalJSON), read
	// as a JSON stream: the same values as reading that YAML, without
	// writing it and parsing it again (a third of a large build's time).
	var out bytes.Buffer
	for _, r := range resMap.Resources() {
		j, err := resourceJSON(r)
		if err != nil {
			return nil, fail(errdef.ErrRender, "kustomize: build of %s: encoding output: %v", errdef.Quote(entry), err)
		}
		out.Write(j)
		out.WriteByte('\n')
	}
	objs, err = manifests.Decode(fmt.Sprintf("kustomize build output of %s", errdef.Quote(entry)), out.Bytes())
	if err != nil {
		return nil, wrap(errdef.ErrRender, err)
	}
	return objs, nil
}

// resourceJSON is r.MarshalJSON() without its detour through YAML text
// (it writes the node as YAML and parses that into a map): the node
// decoded as MarshalJSON's parse decodes it. A node that does not decode
// into JSON's shapes (a non-string key) takes MarshalJSON's own way.
func resourceJSON(r *resource.Resource) ([]byte, error) {
	var v map[string]any
	if err := r.YNode().Decode(&v); err == nil {
		if j, err := json.Marshal(v); err == nil {
			return j, nil
		}
	}
	return r.MarshalJSON()
}

// Error plumbing: every error matches errdef.ErrRender and the given sentinel.

type renderError struct {
	err error
}

func (e *renderError) Error() string   { return e.err.Error() }
func (e *renderError) Unwrap() []error { return []error{e.err, errdef.ErrRender} }

// scrubbed is err with secret values replaced in its message; it still
// matches err's sentinels.
type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

func fail(sentinel error, format string, args ...any) error {
	return &renderError{fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), sentinel)}
}

func wrap(sentinel, err error) error {
	if errors.Is(err, sentinel) {
		return &renderError{err}
	}
	return &renderError{fmt.Errorf("%w: %w", err, sentinel)}
}

func escapes(clean string) bool {
	return clean == ".." || strings.HasPrefix(clean, "../")
}

func hasDriveLetter(p string) bool {
	return len(p) >= 2 && p[1] == ':' && ('a' <= p[0] && p[0] <= 'z' || 'A' <= p[0] && p[0] <= 'Z')
}
