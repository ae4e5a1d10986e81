// Package platform renders a platform component — one whose component
// references are the packages of an internal developer platform — as Argo CD
// app-of-apps: one child Application per reference, each pointing back at this
// plugin for the referenced component version, pinned to the version the
// reference names. Nested platforms work because a child that is itself a
// platform renders its own children; reference cycles are detected before any
// Application is emitted, so Argo CD is never sent into an endless chain.
//
// Child Applications are a way out of an AppProject: Argo CD checks a child
// against the project the child names, not against its parent's. So a child
// inherits its parent's project (ARGOCD_APP_PROJECT_NAME), and a platform
// config — written by whoever writes the parent Application — that asks for
// another project is refused unless the sidecar's operator allows it
// (Options.AllowOtherProjects). Within the parent's project the config may
// choose a child's namespace and cluster: Argo CD checks them against that
// AppProject's destinations, as for any Application of an app of apps. A
// child in another project keeps its inherited destination (the parent's
// cluster, its package's namespace) unless AllowOtherDestinations. When the parent's
// project is unknown (Argo CD before 3.0 does not pass it) children cannot
// inherit it, and the platform is refused unless other projects are allowed.
// Each level of a nested platform is checked when it renders, with the project
// Argo CD gives that level, so a grandchild cannot escape either.
package platform
