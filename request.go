package argocdocm

import "github.com/argocd-ocm-plugin/argocd-ocm-plugin/application"

// The request types are package application's, named here too so that a
// caller of the pipeline needs one import: one value, read by the pipeline
// and by the planners alike.
type (
	// Request is what to render (application.Request).
	Request = application.Request
	// PlatformRequest is what a platform render needs beyond a Request
	// (application.Platform).
	PlatformRequest = application.Platform
	// PlatformSource is the git source of a platform's parent Application
	// (application.PlatformSource).
	PlatformSource = application.PlatformSource
	// Root is an Application's directory, opened (application.Root).
	Root = application.Root
)

// OpenRoot opens dir as the root of a request's files (application.OpenRoot).
func OpenRoot(dir string) (*Root, error) { return application.OpenRoot(dir) }
