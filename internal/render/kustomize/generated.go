package kustomize

import (
	"io/fs"
	"path"
	"slices"

	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/archive"
)

// maxGeneratorScan bounds the kustomizations GeneratedConfigMaps reads.
const maxGeneratorScan = 256

// GeneratedConfigMaps reports whether entryPath of tree is a kustomization
// (so an Overlay applies to it) and the names of the ConfigMaps its
// configMapGenerators (its own and those of the local bases and components
// it reaches) generate, as the generators name them: before the hash
// suffix, which is the name an overlay's configMapGenerator with behavior
// merge takes. Remote and unreadable references are skipped: Render refuses
// or reports them; this only decides what the planner may express as an
// overlay.
func GeneratedConfigMaps(tree *archive.Tree, entryPath string) (bool, []string, error) {
	ok, g, err := Generators(tree, entryPath)
	return ok, g.ConfigMaps, err
}

// Generated are the names of what the generators of a kustomization and of
// the local bases and components it reaches generate, before the hash
// suffix.
type Generated struct {
	ConfigMaps, Secrets []string
}

// Generators is GeneratedConfigMaps for ConfigMaps and Secrets: it reports
// whether entryPath of tree is a kustomization and what its generators
// generate, the names an overlay's generator with behavior merge takes.
func Generators(tree *archive.Tree, entryPath string) (bool, Generated, error) {
	var gen Generated
	if tree == nil {
		return false, gen, nil
	}
	tfs := tree.FS()
	entry, err := Entry(tfs, entryPath)
	if err != nil {
		return false, gen, err
	}
	kfile, err := kustomizationFile(tfs, entry)
	if err != nil || kfile == "" {
		return false, gen, err
	}
	seen := map[string]bool{}
	var walk func(dir string)
	walk = func(dir string) {
		if seen[dir] || len(seen) >= maxGeneratorScan {
			return
		}
		seen[dir] = true
		kf, err := kustomizationFile(tfs, dir)
		if err != nil || kf == "" {
			return
		}
		data, err := fs.ReadFile(tfs, kf)
		if err != nil {
			return
		}
		var k types.Kustomization
		if yaml.Unmarshal(data, &k) != nil {
			return
		}
		for _, g := range k.ConfigMapGenerator {
			if g.Name != "" {
				gen.ConfigMaps = append(gen.ConfigMaps, g.Name)
			}
		}
		for _, g := range k.SecretGenerator {
			if g.Name != "" {
				gen.Secrets = append(gen.Secrets, g.Name)
			}
		}
		for _, r := range append(append([]string(nil), k.Resources...), k.Components...) {
			if looksRemote(r) {
				continue
			}
			p := path.Clean(path.Join(dir, r))
			if escapes(p) {
				continue
			}
			if fi, err := fs.Stat(tfs, p); err == nil && fi.IsDir() {
				walk(p)
			}
		}
	}
	walk(entry)
	return true, gen, nil
}

// TreeGenerators is what the generators of every kustomization of tree
// generate (see Generators): the candidates when the Application's own
// kustomization, not an entry path, chooses the tree's directories.
func TreeGenerators(tree *archive.Tree) Generated {
	var gen Generated
	if tree == nil {
		return gen
	}
	dirs, err := KustomizationDirs(tree.FS())
	if err != nil {
		return gen
	}
	seen := map[string]bool{}
	for _, dir := range append([]string{"."}, dirs...) {
		if len(seen) >= maxGeneratorScan {
			break
		}
		seen[dir] = true
		_, g, err := Generators(tree, dir)
		if err != nil {
			continue
		}
		gen.ConfigMaps = appendNew(gen.ConfigMaps, g.ConfigMaps...)
		gen.Secrets = appendNew(gen.Secrets, g.Secrets...)
	}
	return gen
}

func appendNew(l []string, add ...string) []string {
	for _, a := range add {
		if !slices.Contains(l, a) {
			l = append(l, a)
		}
	}
	return l
}
