// Package yamlfile is the YAML dialect of every file a user writes for the
// plugin (deployment definitions, config resources, platform configs,
// values files, the sidecar policy): the one Kubernetes tools read, that of
// sigs.k8s.io/yaml (go.yaml.in/yaml/v2 underneath), so that a file means
// the same here as in kubectl, Helm and kustomize. Its plain scalars follow
// YAML 1.1: yes, no, on, off, y and n are booleans, 0777 is octal, 1_000 is
// a thousand, an unquoted date is a timestamp. Quote a value to keep it
// text.
//
// Decoders that walk yaml.v3 nodes (for line numbers and alias-bomb limits)
// resolve plain scalars with Plain and map keys with Key, and bound a
// document before decoding it with StructureCount. DecodeStrict is such a
// decoder: one document into a struct, refusing unknown fields, duplicate
// keys, renamed keys and values of the wrong kind, with the field path and
// line (deployment definitions, config resources).
package yamlfile
