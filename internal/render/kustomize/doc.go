// Package kustomize renders a kustomization shipped inside an OCM resource
// (a directoryTree archive) with the kustomize library, sigs.k8s.io/kustomize/api
// (the library behind kustomize v5.8.2).
//
// The archive is held in memory (archive.Tree, bounded and confined by the
// archive reader) and shown to kustomize as a read-only filesys.FileSystem of
// this package that answers from the tree itself: nothing is copied up
// front, and any name a tar entry may carry is a name (kyaml's in-memory file
// system accepts only [a-zA-Z0-9-_.:], so "release-ha-1.21+" or
// "my notes.txt" anywhere in a tree failed). A build never
// touches the disk and can reach nothing but the tree. On top of that, Render follows the hardening of
// Argo CD and Flux:
//
//   - plugins are disabled (types.DisabledPluginConfig): no exec, Go or KRM
//     function plugins, and no helm inflation (helmCharts is refused);
//   - files a kustomization loads must lie in or below its own directory
//     (types.LoadRestrictionsRootOnly); bases may sit elsewhere in the tree,
//     as in overlays/prod → ../../base, but never outside it;
//   - before kustomize runs, every kustomization reachable from the entry
//     directory is checked, and remote references (URLs, github.com/…,
//     git::…, ssh://…, user@host:…, ?ref=…), absolute paths, paths that
//     escape the tree, helm inflation and non-builtin plugin configurations
//     are refused with an error naming the kustomization file and the entry.
//     This matters because kustomize itself would clone a remote base with
//     git and fetch http(s) files even with every restriction in place.
//
// A directory without a kustomization file is rendered as plain manifests
// (see package manifests).
//
// Configuration kustomize builds itself comes in two forms, both built in
// the same single run: an Overlay the plugin writes (WithOverlay: from the
// deployment definition), and a kustomization of the Application's own
// directory that names the tree as .ocm/NAME (WithApplicationOverlay,
// ApplicationDir: read through confine.Root, bounded). kustomize sees the
// parts as one file system (a union of mounts, nothing copied); the
// pre-scan keeps each part's kustomizations inside their part (a tree's
// cannot reach the Application's files, the Application's cannot leave its
// directory), and the Overlay sits on top.
//
// Errors match errdef.ErrRender, plus a more specific sentinel:
// errdef.ErrUnsafeArchive for refused references and plugins,
// errdef.ErrInvalidInput for a bad entry path or kustomization file, and
// errdef.ErrNotFound for a missing entry path or referenced file.
//
// kustomize keeps process-global state (its OpenAPI schema), so builds are
// serialised within a process, and a custom schema (openapi: in a
// kustomization) is reset after the build that set it. kustomize prints
// deprecation warnings on stderr, never on stdout.
package kustomize
