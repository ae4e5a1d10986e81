package kustomize

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/url"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/types"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/yamlfile"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
)

// The pre-scan: kustomize follows remote references (git clones, http(s)
// downloads) whatever its load restrictor says, so every kustomization the
// build can reach is read before the build and anything that could leave
// the tree is refused with a precise message. Kustomize's own checks
// (plugins disabled, root-only loading, in-memory file system) stay in place
// behind it.

type scanner struct {
	fsys fs.FS
	// mounts, when fsys is a union, say what each part's kustomizations
	// may reach (see mountPoint); none: the tree alone.
	mounts []mountPoint
	seen   map[string]bool
	// customOpenAPI is set when a kustomization has an openapi field.
	customOpenAPI bool
	// size of each scanned kustomization as the build expands it: kustomize
	// builds a base once per path that reaches it, so a few kilobytes of
	// kustomizations that include each other twice per level make it build
	// 2^depth copies (see maxInstances and manifests.MaxStreamNodes).
	sizes map[string]expansion
}

// expansion is what building one kustomization costs, its bases expanded.
type expansion struct {
	instances int64 // kustomizations built
	nodes     int64 // structure (yamlfile.StructureCount) of the files they read
}

func (e *expansion) add(o expansion) {
	e.instances = satAdd(e.instances, o.instances)
	e.nodes = satAdd(e.nodes, o.nodes)
}

// satAdd adds without overflowing: expansions grow exponentially.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// maxInstances bounds the kustomizations one build expands to (a base
// reached through two overlays counts twice). Real trees build tens.
const maxInstances = 1000

func newScanner(fsys fs.FS) *scanner {
	return &scanner{fsys: fsys, seen: map[string]bool{}, sizes: map[string]expansion{}}
}

// checkExpansion refuses a build of dir that would expand to more
// kustomizations, or read more structure, than the limits allow. It runs
// after scanDir(dir, false).
func (s *scanner) checkExpansion(dir string) error {
	e := s.sizes[scanKey(dir, false)]
	switch {
	case e.instances > maxInstances:
		return fail(errdef.ErrLimitExceeded, "kustomize: %s expands to %s kustomization builds (bases reached through several overlays are built once per path), more than the limit of %d", errdef.Quote(dir), count(e.instances), maxInstances)
	case e.nodes > manifests.MaxStreamNodes:
		return fail(errdef.ErrLimitExceeded, "kustomize: %s reads %s structural characters (',' '[' '{' '-' ':' '?' newline) of manifests, counting bases once per path that reaches them, more than the limit of %d", errdef.Quote(dir), count(e.nodes), manifests.MaxStreamNodes)
	}
	return nil
}

func count(n int64) string {
	if n == math.MaxInt64 {
		return "more than 2^63"
	}
	return strconv.FormatInt(n, 10)
}

func scanKey(dir string, plugin bool) string { return fmt.Sprintf("%s\x00%t", dir, plugin) }

// fileNodes is the structure of a file the build reads as YAML, 0 when it
// cannot be read (kustomize reports that itself).
func (s *scanner) fileNodes(rel string) int64 {
	data, err := fs.ReadFile(s.fsys, rel)
	if err != nil {
		return 0
	}
	return int64(yamlfile.StructureCount(data))
}

// kust is one kustomization file being checked.
type kust struct {
	s      *scanner
	dir    string // tree-relative directory, "." for the root
	file   string // tree-relative path of the kustomization file
	plugin bool   // its output configures generators, transformers or validators
	size   expansion
}

// file accounts for a file the build reads as YAML.
func (c *kust) readsFile(rel string) {
	c.size.add(expansion{nodes: c.s.fileNodes(rel)})
}

// readsNamedFile is readsFile for a file a field names: a name the file
// system refuses (the Application's directory refuses symbolic links out,
// FIFOs, devices) is refused here with its own line; a missing one is
// left to kustomize, which reports it in its context.
func (c *kust) readsNamedFile(field, entry, rel string) error {
	if _, err := fs.Stat(c.s.fsys, rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return c.statErr(field, entry, rel, err)
	}
	c.readsFile(rel)
	return nil
}

// sub accounts for a kustomization directory the build includes.
func (c *kust) sub(rel string, plugin bool) error {
	if err := c.s.scanDir(rel, plugin); err != nil {
		return err
	}
	c.size.add(c.s.sizes[scanKey(rel, plugin)]) // absent (zero) for a cycle, which kustomize reports
	return nil
}

// scanDir checks the kustomization in dir and everything it refers to.
// plugin is true when dir was named by generators, transformers or
// validators, so that the objects it produces are plugin configurations.
func (s *scanner) scanDir(dir string, plugin bool) error {
	key := scanKey(dir, plugin)
	if s.seen[key] {
		return nil // a cycle or a diamond; kustomize reports cycles itself
	}
	s.seen[key] = true

	file, err := kustomizationFile(s.fsys, dir)
	if err != nil || file == "" {
		return err // without a kustomization file kustomize reports the directory itself
	}
	data, err := fs.ReadFile(s.fsys, file)
	if err != nil {
		return fail(errdef.ErrRender, "kustomize: reading %s: %v", file, err)
	}
	var k types.Kustomization
	if err := k.Unmarshal(data); err != nil {
		return fail(errdef.ErrInvalidInput, "kustomize: %s: %s", file, errdef.OneLine(err.Error()))
	}
	c := &kust{s: s, dir: dir, file: file, plugin: plugin, size: expansion{instances: 1, nodes: int64(yamlfile.StructureCount(data))}}
	if err := c.check(&k); err != nil {
		return err
	}
	s.sizes[key] = c.size
	return nil
}

func (c *kust) check(k *types.Kustomization) error {
	if len(k.HelmCharts) > 0 || len(k.HelmChartInflationGenerator) > 0 || k.HelmGlobals != nil {
		field := "helmCharts"
		switch {
		case len(k.HelmChartInflationGenerator) > 0:
			field = "helmChartInflationGenerator"
		case len(k.HelmCharts) == 0:
			field = "helmGlobals"
		}
		return fail(errdef.ErrRender, "kustomize: %s: %s is not supported: kustomize would run helm and pull charts from the network; ship the chart as an OCM helm resource instead", c.file, field)
	}

	for _, f := range []struct {
		field   string
		entries []string
		//lint:ignore SA1019 kustomize still reads the deprecated field, so the scan must too
	}{{"resources", k.Resources}, {"bases", k.Bases}} {
		for _, e := range f.entries {
			if err := c.resource(f.field, e); err != nil {
				return err
			}
		}
	}
	for _, e := range k.Components {
		if err := c.component(e); err != nil {
			return err
		}
	}
	if err := c.fileRefs(k); err != nil {
		return err
	}
	for _, g := range k.ConfigMapGenerator {
		if err := c.kvSources("configMapGenerator", g.Name, g.KvPairSources); err != nil {
			return err
		}
	}
	for _, g := range k.SecretGenerator {
		if err := c.kvSources("secretGenerator", g.Name, g.KvPairSources); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		field   string
		entries []string
	}{{"generators", k.Generators}, {"transformers", k.Transformers}, {"validators", k.Validators}} {
		for _, e := range f.entries {
			if err := c.pluginEntry(f.field, e); err != nil {
				return err
			}
		}
	}
	return nil
}

// fileRefs checks the fields of k that name files the build reads.
func (c *kust) fileRefs(k *types.Kustomization) error {
	for _, f := range []struct {
		field   string
		entries []string
	}{{"crds", k.Crds}, {"configurations", k.Configurations}} {
		for _, e := range f.entries {
			rel, err := c.ref(f.field, e)
			if err != nil {
				return err
			}
			if err := c.readsNamedFile(f.field, e, rel); err != nil {
				return err
			}
		}
	}
	if len(k.OpenAPI) > 0 {
		c.s.customOpenAPI = true
	}
	if p, ok := k.OpenAPI["path"]; ok {
		rel, err := c.ref("openapi.path", p)
		if err != nil {
			return err
		}
		if err := c.readsNamedFile("openapi.path", p, rel); err != nil {
			return err
		}
	}
	//lint:ignore SA1019 kustomize still reads the deprecated field, so the scan must too
	for _, p := range append(append([]types.Patch(nil), k.Patches...), k.PatchesJson6902...) {
		if p.Path != "" {
			rel, err := c.ref("patches", p.Path)
			if err != nil {
				return err
			}
			if err := c.readsNamedFile("patches", p.Path, rel); err != nil {
				return err
			}
		}
	}
	//lint:ignore SA1019 kustomize still reads the deprecated field, so the scan must too
	for _, p := range k.PatchesStrategicMerge {
		if s := string(p); !strings.Contains(s, "\n") { // otherwise an inline patch
			rel, err := c.ref("patchesStrategicMerge", s)
			if err != nil {
				return err
			}
			if err := c.readsNamedFile("patchesStrategicMerge", s, rel); err != nil {
				return err
			}
		}
	}
	for _, r := range k.Replacements {
		if r.Path != "" {
			rel, err := c.ref("replacements", r.Path)
			if err != nil {
				return err
			}
			if err := c.readsNamedFile("replacements", r.Path, rel); err != nil {
				return err
			}
		}
	}
	return nil
}

// ref checks one path-like entry of field and returns it as a tree-relative path.
func (c *kust) ref(field, entry string) (string, error) {
	e := strings.TrimSpace(entry)
	if looksRemote(e) && !c.localSCPLike(e) {
		return "", fail(errdef.ErrUnsafeArchive, "kustomize: %s: %s entry %s is a remote reference; remote bases, resources and files are not supported, the kustomization must be self-contained", c.file, field, errdef.Quote(entry))
	}
	if path.IsAbs(e) || filepath.IsAbs(e) || hasDriveLetter(e) {
		return "", fail(errdef.ErrUnsafeArchive, "kustomize: %s: %s entry %s is an absolute path; use a path relative to the kustomization", c.file, field, errdef.Quote(entry))
	}
	rel := path.Join(c.dir, e)
	if home := c.home(); escapes(rel) || home != nil && home.confined && !under(rel, home.at) {
		return "", fail(errdef.ErrUnsafeArchive, "kustomize: %s: %s entry %s escapes %s", c.file, field, errdef.Quote(entry), c.where())
	}
	return rel, nil
}

// home is the mount c's kustomization belongs to, nil for a lone tree.
func (c *kust) home() *mountPoint {
	for i := range c.s.mounts {
		if under(c.dir, c.s.mounts[i].at) {
			return &c.s.mounts[i]
		}
	}
	return nil
}

// where names what c's references must stay in.
func (c *kust) where() string {
	if h := c.home(); h != nil && h.what != "" {
		return h.what
	}
	return "the resource tree"
}

// statErr is the error for an entry whose Stat failed: missing, or refused
// by the file system (the Application's directory refuses names that leave
// it through a symbolic link, FIFOs, devices) with its own one line.
func (c *kust) statErr(field, entry, rel string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return c.missing(field, entry, rel)
	}
	return fail(errdef.ErrUnsafeArchive, "kustomize: %s: %s entry %s: %s", c.file, field, errdef.Quote(entry), errdef.OneLine(err.Error()))
}

// localSCPLike reports whether e, which looks like an scp-style git URL
// only by its "user@" start (as "team@2024.yaml" does), names a file of the
// tree: kustomize loads an existing file before it considers a git URL, so
// `kustomize build` reads it as that file.
func (c *kust) localSCPLike(e string) bool {
	if looksRemoteBesidesSCP(e) {
		return false
	}
	rel := path.Join(c.dir, e)
	if escapes(rel) || path.IsAbs(e) {
		return false
	}
	fi, err := fs.Stat(c.s.fsys, rel)
	return err == nil && fi.Mode().IsRegular()
}

// resource checks an entry of resources (or bases): a file or a kustomization directory.
func (c *kust) resource(field, entry string) error {
	rel, err := c.ref(field, entry)
	if err != nil {
		return err
	}
	fi, err := fs.Stat(c.s.fsys, rel)
	switch {
	case err != nil:
		return c.statErr(field, entry, rel, err)
	case fi.IsDir():
		return c.sub(rel, c.plugin)
	}
	c.readsFile(rel)
	if c.plugin {
		return c.pluginFile(field, entry, rel)
	}
	return nil
}

// component checks an entry of components: a directory.
func (c *kust) component(entry string) error {
	rel, err := c.ref("components", entry)
	if err != nil {
		return err
	}
	if _, err := fs.Stat(c.s.fsys, rel); err != nil {
		return c.statErr("components", entry, rel, err)
	}
	return c.sub(rel, c.plugin)
}

func (c *kust) missing(field, entry, rel string) error {
	if hostLike(entry) {
		return fail(errdef.ErrUnsafeArchive, "kustomize: %s: %s entry %s looks like a remote reference and is not in the resource; remote bases and resources are not supported", c.file, field, errdef.Quote(entry))
	}
	in := "the resource"
	for _, m := range c.s.mounts { // deepest first: where the entry would be
		if under(rel, m.at) && m.what != "" {
			in = m.what
			break
		}
	}
	return fail(errdef.ErrNotFound, "kustomize: %s: %s entry %s: no such file or directory in %s", c.file, field, errdef.Quote(entry), in)
}

// kvSources checks the files and env files of a ConfigMap or Secret generator.
func (c *kust) kvSources(field, name string, kv types.KvPairSources) error {
	field = fmt.Sprintf("%s[%s]", field, name)
	for _, f := range kv.FileSources {
		if _, err := c.ref(field+".files", f); err != nil {
			return err
		}
		if _, p, ok := strings.Cut(f, "="); ok { // "key=path"
			if _, err := c.ref(field+".files", p); err != nil {
				return err
			}
		}
	}
	for _, f := range append(append([]string(nil), kv.EnvSources...), kv.EnvSource) {
		if f == "" {
			continue
		}
		if _, err := c.ref(field+".envs", f); err != nil {
			return err
		}
	}
	return nil
}

// pluginEntry checks an entry of generators, transformers or validators:
// inline configuration, a file of configurations or a kustomization
// directory producing them.
func (c *kust) pluginEntry(field, entry string) error {
	if objs, err := manifests.Decode(fmt.Sprintf("%s: inline %s entry", c.file, field), []byte(entry)); err == nil && len(objs) > 0 {
		return c.pluginConfigs(field, objs)
	} else if strings.Contains(entry, "\n") {
		return fail(errdef.ErrInvalidInput, "kustomize: %s: %s: invalid inline configuration: %v", c.file, field, err)
	}
	rel, err := c.ref(field, entry)
	if err != nil {
		return err
	}
	fi, err := fs.Stat(c.s.fsys, rel)
	switch {
	case err != nil:
		return c.statErr(field, entry, rel, err)
	case fi.IsDir():
		return c.sub(rel, true)
	}
	c.readsFile(rel)
	return c.pluginFile(field, entry, rel)
}

func (c *kust) pluginFile(field, entry, rel string) error {
	data, err := fs.ReadFile(c.s.fsys, rel)
	if err != nil {
		return fail(errdef.ErrRender, "kustomize: %s: %s entry %s: %v", c.file, field, errdef.Quote(entry), err)
	}
	objs, err := manifests.Decode(rel, data)
	if err != nil {
		return wrap(errdef.ErrInvalidInput, fmt.Errorf("kustomize: %s: %s entry %s: %w", c.file, field, errdef.Quote(entry), err))
	}
	return c.pluginConfigs(field, objs)
}

// pluginConfigs refuses every configuration but kustomize's builtin plugins
// (apiVersion "builtin"), and checks the paths the builtins load.
func (c *kust) pluginConfigs(field string, objs []manifests.Object) error {
	for _, o := range objs {
		apiVersion, _ := o["apiVersion"].(string)
		kind, _ := o["kind"].(string)
		name := kind
		if md, ok := o["metadata"].(map[string]any); ok {
			if n, ok := md["name"].(string); ok && n != "" {
				name = kind + " " + n
			}
		}
		if apiVersion != konfig.BuiltinPluginApiVersion {
			what := "an exec or Go plugin"
			if fn := functionAnnotation(o); fn != "" {
				what = "a KRM function (" + fn + ")"
			}
			return fail(errdef.ErrUnsafeArchive, "kustomize: %s: %s entry %s (apiVersion %s) is %s; only kustomize's builtin generators and transformers are allowed", c.file, field, name, errdef.Quote(apiVersion), what)
		}
		if kind == "HelmChartInflationGenerator" {
			return fail(errdef.ErrRender, "kustomize: %s: %s entry %s is not supported: kustomize would run helm and pull charts from the network; ship the chart as an OCM helm resource instead", c.file, field, name)
		}
		if err := c.configPaths(fmt.Sprintf("%s entry %s", field, name), o); err != nil {
			return err
		}
	}
	return nil
}

// pathKeys are the fields of builtin plugin configurations that name files.
var pathKeys = map[string]bool{"path": true, "paths": true, "files": true, "envs": true, "env": true}

func (c *kust) configPaths(where string, v any) error {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if pathKeys[k] {
				if err := c.configPathValues(where+" field "+k, e); err != nil {
					return err
				}
				continue
			}
			if err := c.configPaths(where, e); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range v {
			if err := c.configPaths(where, e); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *kust) configPathValues(where string, v any) error {
	switch v := v.(type) {
	case string:
		if strings.Contains(v, "\n") {
			return nil // inline content (PatchStrategicMergeTransformer patches)
		}
		if _, err := c.ref(where, v); err != nil {
			return err
		}
		if _, p, ok := strings.Cut(v, "="); ok {
			_, err := c.ref(where, p)
			return err
		}
	case []any:
		for _, e := range v {
			if err := c.configPathValues(where, e); err != nil {
				return err
			}
		}
	case map[string]any:
		return c.configPaths(where, v)
	}
	return nil
}

// functionAnnotation describes a KRM function configuration, "" if o is none.
func functionAnnotation(o manifests.Object) string {
	md, _ := o["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	for _, k := range []string{"config.kubernetes.io/function", "config.k8s.io/function"} {
		if s, ok := ann[k].(string); ok {
			for _, kind := range []string{"exec", "container", "starlark"} {
				if strings.Contains(s, kind+":") {
					return kind
				}
			}
			return k
		}
	}
	return ""
}

// Schemes that name something off the machine, or another repository.
var remoteSchemes = map[string]bool{
	"http": true, "https": true, "ssh": true, "git": true, "file": true,
	"ftp": true, "ftps": true, "sftp": true, "s3": true, "gs": true, "gcs": true,
	"oci": true, "hg": true, "svn": true, "git+ssh": true, "git+https": true, "ssh+git": true,
}

// scpUser matches the user part of an scp-style git URL (git@host:org/repo),
// as kustomize's own parser does.
var scpUser = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9-]*@`) })

// looksRemote reports whether kustomize would, or a user meant to, fetch s
// from elsewhere: any URL, a git:: or scp-style spec, a github.com path, or
// a go-getter style ?ref= query.
func looksRemote(s string) bool {
	return scpUser().MatchString(s) || looksRemoteBesidesSCP(s)
}

// looksRemoteBesidesSCP is looksRemote without the scp-style "user@" rule.
func looksRemoteBesidesSCP(s string) bool {
	ls := strings.ToLower(s)
	if strings.HasPrefix(ls, "git::") || strings.Contains(ls, "://") {
		return true
	}
	if strings.HasPrefix(ls, "github.com/") || strings.HasPrefix(ls, "github.com:") {
		return true
	}
	if scheme, _, ok := strings.Cut(ls, ":"); ok && remoteSchemes[scheme] {
		return true
	}
	if _, q, ok := strings.Cut(s, "?"); ok {
		if v, err := url.ParseQuery(q); err == nil {
			for _, k := range []string{"ref", "version", "timeout", "submodules"} {
				if v.Has(k) {
					return true
				}
			}
		}
	}
	return false
}

// hostLike reports whether s starts with something like a host name
// ("gitlab.com/org/repo"): said of an entry that is not in the tree, it is
// most likely a remote base written without a scheme.
func hostLike(s string) bool {
	first, rest, ok := strings.Cut(s, "/")
	return ok && rest != "" && strings.Contains(first, ".") &&
		!strings.HasPrefix(first, ".") && !strings.HasSuffix(first, ".")
}
