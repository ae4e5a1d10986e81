// Package param names the plugin's parameters: what an Argo CD Application
// sets in spec.source.plugin.parameters (each with an ARGOCD_ENV_<NAME>
// fallback, upper-cased, "-" as "_"), what the dynamic parameters command
// announces, and what a platform writes into its child Applications. They
// are spelled here only; the CLI's flags of the same meaning carry the same
// names, so an error about a file can name the parameter either way.
package param

// The parameters an Application may set.
const (
	Repository = "repository"
	Component  = "component"
	Version    = "version"
	Resource   = "resource"
	Path       = "path"
	Values     = "values"      // a YAML string
	ValueFiles = "value-files" // values files in the Application's git path
	Parameters = "parameters"  // instance parameters (a map)
	// Definition is a deployment definition file in the Application's
	// source directory (or resource:NAME for one shipped in the component).
	Definition = "definition"
	Localize   = "localize"   // "true": automatic localisation of workload images
	Provenance = "provenance" // "true": annotate objects with their provenance
	Platform   = "platform"   // "true": render the component's references as child Applications
	// PlatformConfig names platform config files in the Application's git path.
	PlatformConfig = "platform-config"
)

// ResolvedVersion is announced (never read) with the version that the
// Application's version or constraint resolves to right now.
const ResolvedVersion = "resolved-version"

// InstancePrefix names one instance parameter as its own Argo CD
// parameter: "parameters.replicas".
const InstancePrefix = Parameters + "."
