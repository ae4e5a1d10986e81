// Package ocmbuild writes OCM component versions the way the OCM CLI v0.48.0
// does: descriptors (v2 or v3alpha1), the OCI manifest with the descriptor layer
// and local blobs as layers, CTFs in directory, tar and tgz form, Helm charts as
// OCI artifact sets or plain chart archives. It is for tests, benchmarks and the
// bundled examples; the output is deterministic (fixed times, sorted entries) so
// committed test data does not churn.
package ocmbuild
