package argocdocm

// allowances is what the generation's sidecar rule (Renderer.rule) decides
// for every request of a renderer: the one place the renderer reads it.
type allowances struct {
	// localArchive, when set, is asked before a confined request opens a
	// CTF or component archive of its checkout (the rule's localArchives).
	localArchive func() error
	// requireImages turns the image origin guard on (package imageguard; it
	// runs last, after localisation and hooks).
	requireImages bool
	// otherProjects and otherDestinations let a platform config give
	// children another project or destination than they inherit (see
	// platform.Options).
	otherProjects, otherDestinations bool
	// provenance annotates every object, whatever the request asks.
	provenance bool
}

// allowances applies the renderer's rule; without one (the zero Renderer)
// local archives are allowed, there is no image origin guard, platform
// children inherit their parent's project and destination, and provenance
// is the request's choice.
func (r *Renderer) allowances() allowances {
	if r.rule == nil {
		return allowances{}
	}
	return allowances{
		localArchive:      r.rule.AllowLocalArchive,
		requireImages:     r.rule.RequireComponentImages,
		otherProjects:     r.rule.Platform.AllowOtherProjects,
		otherDestinations: r.rule.Platform.AllowOtherDestinations,
		provenance:        r.rule.Provenance,
	}
}
