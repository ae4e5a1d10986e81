// Package manifests decodes, encodes and renders plain Kubernetes manifests.
//
// Inside the pipeline manifests travel as structured objects (Object, a plain
// map[string]any holding decoded JSON), so post-processors never re-parse YAML
// and output order is decided once, at emit.
//
// Decode splits a multi-document YAML stream (or a JSON value or stream) into
// objects the way kubectl and Argo CD read manifests: YAML is interpreted as
// sigs.k8s.io/yaml interprets it (go.yaml.in/yaml/v2, YAML 1.1), so scalars
// mean what they mean to kubectl; documents are read straight into objects,
// several at a time on large streams, those of the block-style subset Helm
// writes by a line-based reader of this package that gives yaml.v2's values
// (fastdecode.go), the others by yaml.v2. Render walks a directory of a file
// system (typically an archive.Tree) and decodes every .yaml, .yml and .json
// file in lexical path order. Encode writes objects back as a YAML stream
// with sorted keys; EncodeJSON writes the same objects as a stream of
// one-line JSON documents separated by "---" lines, which YAML readers (Argo
// CD's among them) read alike, at a fraction of the cost.
package manifests
