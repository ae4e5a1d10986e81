// Package generator is Argo CD's ApplicationSet plugin generator for OCM
// component versions: an HTTP service that answers the ApplicationSet
// controller's POST /api/v1/getparams.execute with one parameter set per
// selected component version (or per component reference of a platform),
// each pinned to an exact version and descriptor digest.
//
// Design notes: docs/design.md, section internal/frontend/generator.
package generator
