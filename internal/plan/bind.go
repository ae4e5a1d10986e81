package plan

// Package pipeline binds these when it is initialised (it imports this
// package, so this one cannot name its types); every caller imports the
// pipeline to hold a renderer, so they are bound before any call.
var (
	setPlanner  func(renderer, planner any)
	resourcesOf func(renderer any) Resources
)

// Bind is for package pipeline's init only.
func Bind(set func(renderer, planner any), resources func(renderer any) Resources) {
	setPlanner, resourcesOf = set, resources
}

// SetPlanner makes p the planner of renderer r: r is a *pipeline.Renderer
// and p a Planner[pipeline.Request] (anything else panics, a programming
// error). A renderer without one plans from the request alone.
func SetPlanner(r, p any) { setPlanner(r, p) }

// ResourcesOf is how a planner reads resources through renderer r (a
// *pipeline.Renderer): its access and archive limits, verified like a
// render, so that a planner never fetches on its own.
func ResourcesOf(r any) Resources { return resourcesOf(r) }
