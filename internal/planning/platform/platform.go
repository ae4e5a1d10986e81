package platform

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/application"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/param"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// Defaults of Options.
const (
	DefaultPluginName = "argocd-ocm-plugin"
	DefaultProject    = "default"
	DefaultServer     = "https://kubernetes.default.svc"
	DefaultMaxDepth   = 16

	// LabelPlatform marks child Applications with their parent's name.
	LabelPlatform = "argocd-ocm-plugin.io/platform"
	// AnnotationSyncWave is Argo CD's sync wave annotation.
	AnnotationSyncWave = "argocd.argoproj.io/sync-wave"
)

// Source is where the parent Application's manifests come from; children
// point back at the same git source and OCM repository (PluginName
// defaults to DefaultPluginName). It is the request's own value.
type Source = application.PlatformSource

// Destination of a child Application.
type Destination struct {
	Server    string `json:"server,omitempty"`
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// Package configures the child Application of one reference (by reference name).
type Package struct {
	Disabled    bool              `json:"disabled,omitempty"`
	Namespace   string            `json:"namespace,omitempty"` // default: the reference name
	Destination *Destination      `json:"destination,omitempty"`
	SyncWave    *int              `json:"syncWave,omitempty"`
	Values      map[string]any    `json:"values,omitempty"`
	Parameters  map[string]string `json:"parameters,omitempty"`
	Resource    []string          `json:"resource,omitempty"`
	Path        string            `json:"path,omitempty"`
	// Definition is the child's deployment definition: a file in the
	// Application's git directory, or resource:NAME (parameter definition).
	Definition string `json:"definition,omitempty"`
	// Localize turns the child's automatic localisation on or off
	// (parameter localize); nil leaves the child's default.
	Localize *bool `json:"localize,omitempty"`
	// Name of the child Application (default <platform>-<reference>). A
	// child renders with its Application name as Helm release name, so this
	// is also how a platform keeps an existing release's name.
	Name string `json:"name,omitempty"`
}

// Config is a platform-level configuration: per-package settings that override
// what the platform ships (like TAP or idpbuilder config files).
type Config struct {
	Destination *Destination       `json:"destination,omitempty"`
	Project     string             `json:"project,omitempty"`
	SyncPolicy  map[string]any     `json:"syncPolicy,omitempty"`
	Packages    map[string]Package `json:"packages,omitempty"`
}

// Options of Applications.
type Options struct {
	Parent string // parent Application name; children are <parent>-<reference name>
	// ParentProject is the parent Application's Argo CD project
	// (ARGOCD_APP_PROJECT_NAME), which every child inherits; "" when unknown.
	ParentProject string
	// Project of the children, as a platform config sets it; default
	// ParentProject, else DefaultProject. Another project than ParentProject
	// needs AllowOtherProjects.
	Project string
	Source  Source
	// Destination of every child, as a platform config sets it (package
	// settings win). A child inherits its parent's cluster, DefaultServer
	// (where the parent's child Application objects live, so where Argo CD
	// runs), in its own namespace, the reference name (not the parent's
	// namespace, which is where the child Application objects themselves go).
	// Another destination is checked by Argo CD against the child's
	// AppProject; outside the parent's project it needs AllowOtherDestinations.
	Destination Destination
	// SyncPolicy of the children (default: automated prune and self-heal,
	// CreateNamespace=true).
	SyncPolicy map[string]any
	Packages   map[string]Package
	MaxDepth   int // reference depth checked for cycles (default DefaultMaxDepth)

	// AllowOtherProjects lets children have another project than
	// ParentProject, and a platform render when ParentProject is unknown
	// (Argo CD before 3.0). Off by default: an Application author, who writes
	// the platform config, must not reach another AppProject's permissions
	// through the Applications the platform creates. The sidecar's operator
	// decides; `render` for people allows it.
	AllowOtherProjects bool
	// AllowOtherDestinations lets children in another project than their
	// parent's go to another cluster or namespace than they inherit (see
	// Destination); children in the parent's project may anyway, Argo CD
	// checks them against that AppProject. Off by default; the sidecar's
	// operator decides; `render` for people allows it.
	AllowOtherDestinations bool

	// CheckPackage, when set, validates a package against its child
	// component version before anything is emitted (the deployment
	// definition's parameters, so that a typo fails the platform naming
	// the package instead of a child much later). It is called for enabled
	// packages that set parameters or a definition.
	CheckPackage func(ctx context.Context, child ocm.ComponentVersion, pkg Package) error
}

// ApplyConfig merges a platform config over opts (config wins, per package
// field by field).
func (o *Options) ApplyConfig(c *Config) {
	if c == nil {
		return
	}
	if c.Project != "" {
		o.Project = c.Project
	}
	if c.Destination != nil {
		o.Destination = mergeDest(o.Destination, *c.Destination)
	}
	if c.SyncPolicy != nil {
		o.SyncPolicy = c.SyncPolicy
	}
	if o.Packages == nil {
		o.Packages = map[string]Package{}
	}
	for name, p := range c.Packages {
		o.Packages[name] = mergePackage(o.Packages[name], p)
	}
}

// DecodeConfig strictly decodes a platform config document.
func DecodeConfig(data []byte) (*Config, error) {
	var c Config
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		if where := unknownField(data); where != "" {
			return nil, fmt.Errorf("%w: platform config: %s", errdef.ErrInvalidInput, where)
		}
		return nil, fmt.Errorf("%w: platform config: %v", errdef.ErrInvalidInput, err)
	}
	return &c, nil
}

func mergeDest(base, over Destination) Destination {
	if over.Server != "" || over.Name != "" {
		base.Server, base.Name = over.Server, over.Name
	}
	if over.Namespace != "" {
		base.Namespace = over.Namespace
	}
	return base
}

func mergePackage(base, over Package) Package {
	if over.Disabled {
		base.Disabled = true
	}
	if over.Namespace != "" {
		base.Namespace = over.Namespace
	}
	if over.Destination != nil {
		d := Destination{}
		if base.Destination != nil {
			d = *base.Destination
		}
		d = mergeDest(d, *over.Destination)
		base.Destination = &d
	}
	if over.SyncWave != nil {
		base.SyncWave = over.SyncWave
	}
	if over.Values != nil {
		base.Values = deepMerge(base.Values, over.Values)
	}
	if over.Parameters != nil {
		if base.Parameters == nil {
			base.Parameters = map[string]string{}
		}
		for k, v := range over.Parameters {
			base.Parameters[k] = v
		}
	}
	if over.Resource != nil {
		base.Resource = over.Resource
	}
	if over.Path != "" {
		base.Path = over.Path
	}
	if over.Definition != "" {
		base.Definition = over.Definition
	}
	if over.Localize != nil {
		base.Localize = over.Localize
	}
	if over.Name != "" {
		base.Name = over.Name
	}
	return base
}

func deepMerge(base, over map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		if bm, ok := out[k].(map[string]any); ok {
			if om, ok := v.(map[string]any); ok {
				out[k] = deepMerge(bm, om)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// IsPlatform reports whether a component renders as a platform by default: it
// has component references and no resource that renderable reports true for.
func IsPlatform(d *ocm.Descriptor, renderable func(resourceType string) bool) bool {
	if len(d.References) == 0 {
		return false
	}
	for _, r := range d.Resources {
		if renderable(r.Type) {
			return false
		}
	}
	return true
}

// Applications returns one child Application per component reference of cv
// (disabled packages left out), after checking that the reference graph below
// cv resolves and has no cycle.
func Applications(ctx context.Context, repo ocm.Repository, cv ocm.ComponentVersion, opts Options) ([]manifests.Object, error) {
	d := cv.Descriptor()
	if err := CheckReferences(ctx, repo, d, opts.MaxDepth); err != nil {
		return nil, err
	}
	if opts.Parent == "" {
		return nil, fmt.Errorf("%w: a platform needs the parent Application's name (ARGOCD_APP_NAME, or --release-name)", errdef.ErrInvalidInput)
	}
	for name := range opts.Packages {
		if !hasReference(d, name) {
			return nil, fmt.Errorf("%w: platform config names package %s, but component %s:%s has no such reference (it has: %s)",
				errdef.ErrInvalidInput, errdef.Quote(name), d.Name, d.Version, strings.Join(referenceNames(d), ", "))
		}
	}
	if opts.ParentProject == "" && !opts.AllowOtherProjects {
		return nil, fmt.Errorf("%w: the parent Application's Argo CD project is unknown (ARGOCD_APP_PROJECT_NAME, passed by Argo CD 3.0 and later), so its child Applications cannot inherit it; the sidecar's operator may allow other projects (ARGOCD_OCM_PLATFORM_ALLOW_OTHER_PROJECTS=true)",
			errdef.ErrNotAllowed)
	}
	if p := opts.Project; p != "" && p != opts.ParentProject && !opts.AllowOtherProjects {
		return nil, fmt.Errorf("%w: the platform config gives the child Applications project %s, but children stay in their parent Application's project %s unless the sidecar's operator allows other projects (ARGOCD_OCM_PLATFORM_ALLOW_OTHER_PROJECTS=true)",
			errdef.ErrNotAllowed, errdef.Quote(p), errdef.Quote(opts.ParentProject))
	}
	refs := append([]ocm.Reference(nil), d.References...)
	sort.SliceStable(refs, func(i, j int) bool { return refs[i].Name < refs[j].Name })
	var out []manifests.Object
	names := map[string]string{} // child Application name → package
	for _, ref := range refs {
		pkg := opts.Packages[ref.Name]
		if pkg.Disabled {
			continue
		}
		if opts.CheckPackage != nil && (len(pkg.Parameters) > 0 || pkg.Definition != "") {
			ccv, err := repo.LookupComponentVersion(ctx, ref.ComponentName, ref.Version)
			if err != nil {
				return nil, fmt.Errorf("package %s: %w", ref.Name, err)
			}
			if err := opts.CheckPackage(ctx, ccv, pkg); err != nil {
				return nil, fmt.Errorf("package %s (%s:%s): %w", ref.Name, ref.ComponentName, ref.Version, err)
			}
		}
		app, err := child(opts, ref, pkg)
		if err != nil {
			return nil, fmt.Errorf("reference %s: %w", ref.Name, err)
		}
		name := app["metadata"].(map[string]any)["name"].(string)
		if other, ok := names[name]; ok {
			return nil, fmt.Errorf("%w: packages %s and %s both make the child Application %s: give one of them another name",
				errdef.ErrInvalidInput, other, ref.Name, errdef.Quote(name))
		}
		names[name] = ref.Name
		out = append(out, app)
	}
	return out, nil
}

func hasReference(d *ocm.Descriptor, name string) bool {
	for _, r := range d.References {
		if r.Name == name {
			return true
		}
	}
	return false
}

func referenceNames(d *ocm.Descriptor) []string {
	var n []string
	for _, r := range d.References {
		n = append(n, r.Name)
	}
	return n
}

// Compiled on first use, not in every process's start-up.
var (
	invalidName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^a-z0-9-]+`) })
	dnsName     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`) })
)

// appName makes a DNS-1123 name from parent and reference name.
func appName(parent, ref string) string {
	n := invalidName().ReplaceAllString(strings.ToLower(parent+"-"+ref), "-")
	n = strings.Trim(n, "-")
	if len(n) > 253 {
		n = strings.TrimRight(n[:253], "-")
	}
	return n
}

func child(opts Options, ref ocm.Reference, pkg Package) (manifests.Object, error) {
	src := opts.Source
	plugin := src.PluginName
	if plugin == "" {
		plugin = DefaultPluginName
	}
	name, err := childName(opts, ref, pkg)
	if err != nil {
		return nil, err
	}
	params, err := childParams(src, ref, pkg)
	if err != nil {
		return nil, err
	}
	destMap, err := childDestination(opts, ref, pkg)
	if err != nil {
		return nil, err
	}
	policy := opts.SyncPolicy
	if policy == nil {
		policy = map[string]any{
			"automated":   map[string]any{"prune": true, "selfHeal": true},
			"syncOptions": []any{"CreateNamespace=true"},
		}
	}
	source := map[string]any{
		"repoURL":        src.RepoURL,
		"targetRevision": src.TargetRevision,
		"path":           src.Path,
		"plugin":         map[string]any{"name": plugin, "parameters": params},
	}
	if src.RepoURL == "" {
		return nil, fmt.Errorf("%w: the parent's git source is unknown (ARGOCD_APP_SOURCE_REPO_URL, or --source-repo-url), children cannot point back at it", errdef.ErrInvalidInput)
	}
	meta := map[string]any{
		"name":       name,
		"labels":     map[string]any{LabelPlatform: opts.Parent},
		"finalizers": []any{"resources-finalizer.argocd.argoproj.io"},
	}
	if pkg.SyncWave != nil {
		meta["annotations"] = map[string]any{AnnotationSyncWave: strconv.Itoa(*pkg.SyncWave)}
	}
	return manifests.Object{
		"apiVersion": "argoproj.io/v1alpha1",
		"kind":       "Application",
		"metadata":   meta,
		"spec": map[string]any{
			"project":     childProject(opts),
			"destination": destMap,
			"source":      source,
			"syncPolicy":  policy,
		},
	}, nil
}

// childName is the child Application's name: the package's, checked, else
// one made of the parent's and the reference's.
func childName(opts Options, ref ocm.Reference, pkg Package) (string, error) {
	if pkg.Name == "" {
		return appName(opts.Parent, ref.Name), nil
	}
	if len(pkg.Name) > 253 || !dnsName().MatchString(pkg.Name) {
		return "", fmt.Errorf("%w: name %s is not a valid Application name (lower-case letters, digits, '-' and '.', at most 253 characters)",
			errdef.ErrInvalidInput, errdef.Quote(pkg.Name))
	}
	return pkg.Name, nil
}

// childParams are the plugin parameters that make the child render the
// package's component version.
func childParams(src Source, ref ocm.Reference, pkg Package) ([]any, error) {
	params := []any{
		map[string]any{"name": param.Repository, "string": src.Repository},
		map[string]any{"name": param.Component, "string": ref.ComponentName},
		map[string]any{"name": param.Version, "string": ref.Version},
	}
	if len(pkg.Resource) > 0 {
		params = append(params, map[string]any{"name": param.Resource, "array": toAny(pkg.Resource)})
	}
	if pkg.Path != "" {
		params = append(params, map[string]any{"name": param.Path, "string": pkg.Path})
	}
	if pkg.Definition != "" {
		params = append(params, map[string]any{"name": param.Definition, "string": pkg.Definition})
	}
	if pkg.Localize != nil {
		params = append(params, map[string]any{"name": param.Localize, "string": strconv.FormatBool(*pkg.Localize)})
	}
	if len(pkg.Values) > 0 {
		v, err := yaml.Marshal(pkg.Values)
		if err != nil {
			return nil, err
		}
		params = append(params, map[string]any{"name": param.Values, "string": string(v)})
	}
	if len(pkg.Parameters) > 0 {
		m := map[string]any{}
		for k, v := range pkg.Parameters {
			m[k] = v
		}
		params = append(params, map[string]any{"name": param.Parameters, "map": m})
	}
	return params, nil
}

// childDestination is the child's spec.destination: its package's, the
// platform's, else the parent's cluster in the package's namespace. Outside
// its parent's project a child keeps that unless the operator allows other
// destinations.
func childDestination(opts Options, ref ocm.Reference, pkg Package) (map[string]any, error) {
	// Namespace: the package's, else the platform default, else the reference name.
	inherited := Destination{Server: DefaultServer, Namespace: strings.Trim(invalidName().ReplaceAllString(strings.ToLower(ref.Name), "-"), "-")}
	dest := mergeDest(Destination{Server: DefaultServer}, opts.Destination)
	if pkg.Destination != nil {
		dest = mergeDest(dest, *pkg.Destination)
	}
	if pkg.Namespace != "" {
		dest.Namespace = pkg.Namespace
	}
	if dest.Namespace == "" {
		dest.Namespace = inherited.Namespace
	}
	if dest.Name != "" {
		dest.Server = ""
	}
	// A child in its parent's project is checked by Argo CD against that
	// AppProject's destinations, as every Application of an ordinary app
	// of apps is: the platform config may choose its namespace and cluster
	// within them. A child in another project (the operator allowed other
	// projects) keeps its inherited destination unless other destinations
	// are allowed too, so that one switch does not imply the other.
	sameProject := opts.ParentProject != "" && childProject(opts) == opts.ParentProject
	if dest != inherited && !opts.AllowOtherDestinations && !sameProject {
		return nil, fmt.Errorf("%w: the platform config sends the child Application of project %s to %s, but a child outside its parent's project stays on its parent's cluster in its package's namespace (%s) unless the sidecar's operator allows other destinations (ARGOCD_OCM_PLATFORM_ALLOW_OTHER_DESTINATIONS=true)",
			errdef.ErrNotAllowed, errdef.Quote(childProject(opts)), dest, inherited)
	}
	destMap := map[string]any{"namespace": dest.Namespace}
	if dest.Server != "" {
		destMap["server"] = dest.Server
	} else {
		destMap["name"] = dest.Name
	}
	return destMap, nil
}

// childProject is the child's Argo CD project: the platform's, else the
// parent's, else the default.
func childProject(opts Options) string {
	if opts.Project != "" {
		return opts.Project
	}
	if opts.ParentProject != "" {
		return opts.ParentProject
	}
	return DefaultProject
}

// String describes a destination for messages.
func (d Destination) String() string {
	cluster := "server " + errdef.Quote(d.Server)
	if d.Server == "" {
		cluster = "cluster " + errdef.Quote(d.Name)
	}
	return cluster + ", namespace " + errdef.Quote(d.Namespace)
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// CheckReferences resolves every reference below d and fails on a missing
// component version, a cycle (naming its path) or a chain deeper than maxDepth.
func CheckReferences(ctx context.Context, repo ocm.Repository, d *ocm.Descriptor, maxDepth int) error {
	if maxDepth <= 0 {
		maxDepth = DefaultMaxDepth
	}
	done := map[string]bool{}
	var walk func(d *ocm.Descriptor, path []string) error
	walk = func(d *ocm.Descriptor, path []string) error {
		key := d.Name + ":" + d.Version
		for i, p := range path {
			if p == key {
				return fmt.Errorf("%w: component reference cycle: %s", errdef.ErrInvalidDescriptor, errdef.Cut(strings.Join(append(path[i:], key), " -> ")))
			}
		}
		if done[key] {
			return nil
		}
		if len(path) >= maxDepth {
			return fmt.Errorf("%w: component references nest deeper than %d below %s", errdef.ErrLimitExceeded, maxDepth, path[0])
		}
		path = append(path, key)
		for _, ref := range d.References {
			if err := ctx.Err(); err != nil {
				return err
			}
			cv, err := repo.LookupComponentVersion(ctx, ref.ComponentName, ref.Version)
			if err != nil {
				return fmt.Errorf("reference %s of %s: %w", ref.Name, key, err)
			}
			if err := walk(cv.Descriptor(), path); err != nil {
				return err
			}
		}
		done[key] = true
		return nil
	}
	return walk(d, nil)
}

// SyncWaveNote is the note for people when children use sync waves: Argo CD
// waits for a wave's Applications to be healthy only with a health check for
// Application objects, which it does not have by default. "" without waves.
func SyncWaveNote(apps []manifests.Object) string {
	for _, a := range apps {
		md, _ := a["metadata"].(map[string]any)
		ann, _ := md["annotations"].(map[string]any)
		if _, ok := ann[AnnotationSyncWave]; ok {
			return "argocd-ocm-plugin: note: the child Applications use sync waves; Argo CD waits for a wave to be healthy only with a health check for Application objects (resource.customizations.health.argoproj.io_Application in argocd-cm, see the README), without it waves only order creation"
		}
	}
	return ""
}
