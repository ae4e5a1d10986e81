// Package server is the sidecar's long-lived render mode: a server on a unix
// socket that runs the plugin's generate and parameters commands in one warm
// process, and the client the thin argocd-ocm-client binary uses to reach it.
//
// Why: a generate process spends 60–75 ms initialising packages (Helm, the
// Kubernetes schemes, JSON schema) before it renders anything, more than a
// warm render of a small chart or kustomization takes, and an ApplicationSet
// makes Argo CD start hundreds of them at once. A thin client starts in a few
// milliseconds; the server renders with its packages, on-disk cache and
// connections already warm.
//
// Contract:
//   - The client sends its arguments, working directory (the Application's
//     path), the request-scoped part of its environment (see RequestScoped) and
//     a fingerprint of the rest (see Fingerprint). The server reads
//     request-scoped variables from the request only and everything else from
//     its own environment, so one Application's variables never reach another.
//   - A server whose environment fingerprint differs, or that speaks another
//     protocol version, refuses without running anything; so does a server
//     that is shutting down. The client then renders in a process of its own
//     (ErrUnavailable): the server makes generation faster, never different.
//   - The result is the command's exit code, stdout and stderr, complete;
//     nothing is streamed, so the error contract (no partial stdout) holds.
//   - The socket is created mode 0600 in a directory of mode 0700, and a peer
//     of another user is refused (SO_PEERCRED) where the system tells.
//
// The package imports only the standard library: the client's start-up time
// is the point of the exercise.
package server
