package plan

// Binding is how this module reaches a pipeline renderer's planning: the
// renderer's exported API may not name this internal contract (see
// hack/exportcount: a public type naming an internal one is a leak), and
// this package cannot name the renderer (the pipeline imports it). Package
// pipeline binds it once, when it is initialised; every caller holds a
// renderer, so it is bound before any call.
type Binding struct {
	// Attach makes p the planner of renderer r (a *pipeline.Renderer).
	Attach func(r any, p Planner)
	// InputOf is what r's planner plans req (a pipeline.Request) from.
	InputOf func(r, req any) Input
}

var binding Binding

// Bind is for package pipeline's init only.
func Bind(b Binding) { binding = b }

// Attach makes p the planner of renderer r, a *pipeline.Renderer (anything
// else panics, a programming error). A renderer without one plans from the
// request alone and refuses a definition or instance parameters.
func Attach(r any, p Planner) { binding.Attach(r, p) }

// InputOf is the Input renderer r (a *pipeline.Renderer) gives its planner
// for req (a pipeline.Request): for a caller that asks the planner
// something besides a plan (the parameters it announces, a conversion).
func InputOf(r, req any) Input { return binding.InputOf(r, req) }
