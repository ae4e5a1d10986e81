package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/archive"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/examples"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
)

// The kustomize section's trees besides the demo and shop (issue 17): the
// unmodified upstream trees of ../shared/fixtures/realworld/kustomize, as
// their archives are, and a large generated tree of many bases, a shared
// component, generators and names kyaml's file system refused.

// realworldKustomize is where the team's shared real-world trees are,
// relative to the repository.
const realworldKustomize = "../shared/fixtures/realworld/kustomize"

// realworldTrees are the trees of realworldKustomize the section builds:
// the archive, the entry path inside it (the archives hold a top directory).
var realworldTrees = []struct{ label, archive, entry string }{
	{"argocd cluster-install (upstream)", "argocd-manifests.tgz", "argocd-manifests/cluster-install"},
	{"argocd namespace-install (upstream)", "argocd-manifests.tgz", "argocd-manifests/namespace-install"},
	{"podinfo kustomize (upstream)", "podinfo-kustomize.tgz", "podinfo-kustomize"},
}

const compKustPrefix = "bench.example.com/kustomize/"

// addKustomizeTrees pushes the section's extra trees (registry and a CTF of
// their own) and returns their fixtures. Missing shared fixtures are
// skipped with a note: the large tree is measured anyway.
func (b *bench) addKustomizeTrees() []*treeFixture {
	var comps []*ocmbuild.Component
	var fx []*treeFixture
	add := func(label, name string, tgz []byte, entry string) {
		comp := compKustPrefix + name
		tree, err := archive.ReadTree(bytes.NewReader(tgz))
		if err != nil {
			fatalf("%s: %v", label, err)
		}
		dir := b.dir("trees", "kust-"+name)
		if err := tree.WriteTo(dir); err != nil {
			fatalf("%s: %v", label, err)
		}
		comps = append(comps, treeComponent(comp, tgz))
		fx = append(fx, &treeFixture{Label: label, Component: comp, Dir: filepath.Join(dir, filepath.FromSlash(entry)), Path: entry})
	}
	src := filepath.Join(b.root, realworldKustomize)
	for i, t := range realworldTrees {
		tgz, err := os.ReadFile(filepath.Join(src, t.archive))
		if err != nil {
			logf("kustomize: skipping %s: %v (the team's shared fixtures beside the repository)", t.label, err)
			continue
		}
		add(t.label, fmt.Sprintf("realworld-%d", i), tgz, t.entry)
	}
	n := 3 * b.cfg.ShopApps
	files := examples.LargeKustomizeTree(n)
	tgz, err := ocmbuild.TarFiles(files, true)
	if err != nil {
		fatalf("%v", err)
	}
	add(fmt.Sprintf("large tree (synthetic, %d services, %d kustomizations)", n, n+2), "large", tgz, "overlays/prod")
	b.reg.Push(b.tb, "ocm", comps...)
	// generate confines a local repository to the Application's directory
	// (its working directory), by a relative name: the CTF of this
	// section is there, beside the harness's own (b.ctfDir is app/ctf).
	if err := ocmbuild.WriteCTF(filepath.Join(b.appDir, appCTFKustomize), comps...); err != nil {
		fatalf("ctf: %v", err)
	}
	if filepath.Join(b.appDir, appCTF) != b.ctfDir {
		fatalf("ctf: the harness's CTF is %s, want %s", b.ctfDir, filepath.Join(b.appDir, appCTF))
	}
	for _, f := range fx {
		f.CTF = appCTFKustomize
	}
	for _, f := range b.treeFx {
		if f.CTF == "" {
			f.CTF = appCTF
		}
	}
	return fx
}

// The CTFs in the Application's directory, by the names generate is given.
const (
	appCTF          = "ctf"
	appCTFKustomize = "ctf-kustomize"
)
