// Package image assembles the argocd-ocm-plugin sidecar image without a
// container engine: FROM scratch, a base layer with what a CMP sidecar needs
// (/etc/passwd and /etc/group with user 999, CA certificates, /tmp, HOME and
// the CMP config at /home/argocd/cmp-server/config/plugin.yaml, for the
// alternative sidecar command) and one layer per platform with the static
// binaries, under an OCI image index. Every
// timestamp is the given creation time and every tar entry is written in a
// fixed order with fixed owners, so the same inputs give the same digest.
package image
