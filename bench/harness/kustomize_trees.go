package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/archive"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/ocmbuild"
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
	files := largeKustomizeTree(n)
	tgz, err := ocmbuild.TarFiles(files, true)
	if err != nil {
		fatalf("%v", err)
	}
	add(fmt.Sprintf("large tree (synthetic, %d services, %d kustomizations)", n, n+2), "large", tgz, "overlays/prod")
	b.reg.Push(b.tb, "ocm", comps...)
	// generate confines a local repository to the Application's directory
	// (its working directory), by a relative name: the CTFs of this
	// section are there, the harness's own copied beside them.
	if err := ocmbuild.WriteCTF(filepath.Join(b.appDir, appCTFKustomize), comps...); err != nil {
		fatalf("ctf: %v", err)
	}
	// setup writes the harness's CTF there already (9762e12); copying it
	// onto itself fails (the copy refuses existing files).
	if dst := filepath.Join(b.appDir, appCTF); dst != b.ctfDir {
		if err := os.CopyFS(dst, os.DirFS(b.ctfDir)); err != nil {
			fatalf("ctf: %v", err)
		}
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

// largeKustomizeTree is a platform as teams ship one: n services, each a
// kustomization of its own (Deployment, Service, ServiceAccount, a
// configMapGenerator) using a shared component (a PodDisruptionBudget and
// a JSON patch), and a prod overlay over all of them with a prefix, a
// namespace, labels, replicas, images, a strategic merge patch by label
// selector and a generator merge. Service directories carry names
// kyaml's in-memory file system refused ("svc-07 (eu)+").
func largeKustomizeTree(n int) map[string][]byte {
	f := map[string][]byte{}
	f["components/monitoring/kustomization.yaml"] = []byte(`apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Component
resources: [pdb.yaml]
patches:
  - target: {kind: Deployment}
    patch: |-
      - op: add
        path: /spec/template/metadata/annotations
        value: {prometheus.io/scrape: "true", prometheus.io/port: "9090"}
`)
	f["components/monitoring/pdb.yaml"] = []byte("apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: pdb\nspec:\n  maxUnavailable: 1\n")
	var services, images, replicas strings.Builder
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("svc-%02d", i)
		dir := fmt.Sprintf("services/%s (eu)+", name)
		fmt.Fprintf(&services, "  - ../../%s\n", dir)
		f[dir+"/kustomization.yaml"] = []byte(fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
nameSuffix: -%[1]s
resources: [workload.yaml]
components: [../../components/monitoring]
labels:
  - pairs: {app.kubernetes.io/name: %[1]s}
    includeSelectors: true
configMapGenerator:
  - name: config
    literals: [SERVICE=%[1]s, LOG_LEVEL=info, "INDEX=%[2]d"]
`, name, i))
		f[dir+"/workload.yaml"] = []byte(fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
  labels: {tier: backend}
spec:
  replicas: 1
  template:
    metadata:
      labels: {tier: backend}
    spec:
      serviceAccountName: app
      containers:
        - name: main
          image: registry.example.com/platform/%[1]s:1.0.0
          ports: [{containerPort: 8080, name: http}]
          envFrom: [{configMapRef: {name: config}}]
          resources:
            requests: {cpu: 50m, memory: 64Mi}
---
apiVersion: v1
kind: Service
metadata:
  name: app
spec:
  ports: [{port: 80, targetPort: http}]
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: app
`, name))
		fmt.Fprintf(&images, "  - name: registry.example.com/platform/%s\n    newName: mirror.example.com/platform/%s\n    newTag: 1.0.1\n", name, name)
		if i%2 == 0 {
			fmt.Fprintf(&replicas, "  - name: app-%s\n    count: 3\n", name)
		}
	}
	f["overlays/prod/kustomization.yaml"] = []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n" + services.String() +
		"namespace: platform-prod\nnamePrefix: prod-\nlabels:\n  - pairs: {env: prod}\n" +
		"commonAnnotations: {example.com/owner: platform-team}\n" +
		"patches:\n  - target: {kind: Deployment, labelSelector: tier=backend}\n    patch: |-\n      apiVersion: apps/v1\n      kind: Deployment\n      metadata: {name: any}\n" +
		"      spec:\n        template:\n          spec:\n            containers:\n              - name: main\n                resources:\n                  limits: {cpu: \"1\", memory: 512Mi}\n" +
		"configMapGenerator:\n  - name: config-svc-00\n    behavior: merge\n    literals: [LOG_LEVEL=debug]\n" +
		"images:\n" + images.String() + "replicas:\n" + replicas.String())
	return f
}
