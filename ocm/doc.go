// Package ocm is the Open Component Model as the plugin needs it: component
// descriptors (schema v2 and ocm.software/v3alpha1 decoded into one internal type),
// identities, the version↔tag mapping, and the Repository interface that the
// storage back ends (CTF, component archive, OCI registry) implement in sibling
// packages.
//
// The formats follow what the OCM CLI v0.48.0 writes, not only the spec prose;
// see shared/docs/ocm-format.md.
package ocm
