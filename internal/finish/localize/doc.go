// Package localize points rendered workloads at the component's own copies of
// its images, so that one component version deploys into any environment,
// air-gapped ones included, without anyone editing image references.
//
// Design notes: docs/design.md, section internal/finish/localize.
package localize
