// Package confine opens the files an Argo CD Application names (its
// repository, value files, deployment definition and platform configs) inside
// the Application's directory, and nowhere else.
//
// Design notes: docs/design.md, section internal/util/confine.
package confine
