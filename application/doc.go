// Package application is what an Argo CD Application (or a person running
// render) asks of a render: the Request, and the files it names, read inside
// the Application's directory (Root) when the request is confined. The
// pipeline (the module's root package, which names these types too) and the
// planners read the same Request value.
package application
