// Package manifests decodes, encodes and renders plain Kubernetes manifests.
//
// Inside the pipeline manifests travel as structured objects (Object, a plain
// map[string]any holding decoded JSON), so post-processors never re-parse YAML
// and output order is decided once, at emit.
//
// Decode splits a multi-document YAML stream (or a JSON value or stream) into
// objects the way kubectl and Argo CD read manifests: YAML is interpreted by
// sigs.k8s.io/yaml, so scalars mean what they mean to kubectl. Render walks a
// directory of a file system (typically an archive.Tree) and decodes every
// .yaml, .yml and .json file in lexical path order. Encode writes objects back
// as a YAML stream with sorted keys.
package manifests
