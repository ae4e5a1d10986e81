package application

import "path/filepath"

// Request is what to render: what the Application (or the person running
// render) asks for, and nothing the operator decides. The CLI fills it from
// flags, the CMP front end from Argo CD's environment. What the operator
// allows (local archives, the image origin guard, platform children leaving
// their parent's project or destination) is the generation's sidecar rule,
// argocdocm.Generation.Rule, which the Renderer applies.
type Request struct {
	Application string // Argo CD Application, for error messages
	Repository  string // CTF/component archive path, or registry spec
	// Dir is the directory relative file names in the request (a CTF
	// repository, values, platform config and definition files) are read
	// from; empty means the working directory. A long-lived render server
	// serves many Applications from one process, so it cannot chdir.
	Dir string
	// Root, when set, confines every file the request names (repository,
	// value files, platform configs, definition) to the Application's
	// directory: generate and the render server set it, render (for people)
	// does not. The caller opens it (OpenRoot) and closes it.
	Root      *Root `json:"-"`
	Component string
	Version   string
	// Resources to render, as identities "name" or "name,key=value";
	// empty means the component's only renderable resource.
	Resources []string
	// Path is the entry path inside directory resources (default: the root).
	Path string
	// DefinitionFile is a deployment definition given by the user (CLI flag or
	// a file in the Application's git path), or resource:NAME to pick one
	// the component ships (docs/deployment-definition.md).
	DefinitionFile string
	// Platform configures app-of-apps rendering of platform components.
	Platform Platform
	// Provenance asks for provenance annotations (the Application's
	// "provenance" parameter; the sidecar may also force them on).
	Provenance bool
	// Parameters are instance parameters (name → value as text; the deployment
	// definition declares their types).
	Parameters map[string]string
	// Localize turns on automatic localisation: image references in the
	// rendered workloads that match an image resource of the component are
	// rewritten to the component's location of it (docs/deployment-definition.md).
	Localize bool

	// Helm inputs.
	ValueFiles  []string       // values files, later ones win
	Set         []string       // --set style values, win over files
	Values      map[string]any // inline values, win over files, lose to Set
	ReleaseName string
	Namespace   string
	KubeVersion string
	APIVersions []string

	// SetJSON, SetString and SetFile are Helm's --set-json, --set-string and
	// --set-file, applied in Helm's order: files, --set-json, --set,
	// --set-string, --set-file. SetFile reads key=path with path as Helm
	// does (inside Root when the request is confined).
	SetJSON   []string
	SetString []string
	SetFile   []string
}

// File is where a file the request names is read when it is not confined
// (Root nil): name itself when it is absolute or Dir is empty, else name
// inside Dir. Messages keep naming name.
func (r Request) File(name string) string {
	if r.Dir == "" || filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(r.Dir, name)
}

// Platform is what a platform render needs beyond a Request: where the
// parent Application comes from, so that children can point back at it.
type Platform struct {
	// Force renders as a platform even when the component has resources.
	Force bool
	// ConfigFiles are platform configs (per-package settings), later ones win;
	// Request.Values, when set, is applied last as an inline platform config.
	ConfigFiles []string
	// Source is where the parent Application comes from, which children
	// point back at.
	Source PlatformSource
	// Project is the parent Application's Argo CD project
	// (ARGOCD_APP_PROJECT_NAME), which its children inherit.
	Project string
	// Whether a platform config may give children another project or
	// destination than they inherit is the operator's, not the request's:
	// the generation's rule (policy.Rule.Platform).
}

// PlatformSource is the git source of a platform's parent Application,
// which its children share.
type PlatformSource struct {
	RepoURL, TargetRevision, Path string
	// Repository is the OCM repository spec the parent used (a path relative
	// to Path stays valid for the children, which share Path); default
	// Request.Repository.
	Repository string
	// PluginName is the plugin children name (default: this plugin's).
	PluginName string
}
