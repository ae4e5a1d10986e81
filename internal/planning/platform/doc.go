// Package platform renders a platform component — one whose component
// references are the packages of an internal developer platform — as Argo CD
// app-of-apps: one child Application per reference, each pointing back at this
// plugin for the referenced component version, pinned to the version the
// reference names. Nested platforms work because a child that is itself a
// platform renders its own children; reference cycles are detected before any
// Application is emitted, so Argo CD is never sent into an endless chain.
//
// Design notes: docs/design.md, section internal/planning/platform.
package platform
