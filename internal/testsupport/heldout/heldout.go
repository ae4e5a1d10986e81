// Package heldout reads testdata/heldout/cases.txt for the held-out tests
// (make test-heldout): upstream charts and kustomize trees the renderers
// were never tuned on, taken at pinned versions from the Go modules that
// ship them, and the reference CLI commands (helm template, kustomize
// build) each case is compared with.
package heldout

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests/manifeststest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
)

// The reference CLIs the held-out tests compare with, set by make
// test-heldout to make reftools' builds; a test skips, saying so, without.
const (
	envHelm      = "HELDOUT_HELM"
	envKustomize = "HELDOUT_KUSTOMIZE"
)

// Source is a chart or tree line: a directory of a module version.
type Source struct {
	Module string // module@version
	Dir    string // slash-separated, inside the module
}

// Case is a case line: its name and the reference CLI's arguments after
// the command ("helm template" or "kustomize build"). Fails marks a case
// the CLI refuses ("<case>: fails helm template …"): the plugin must
// refuse it too, with the CLI's message (see Expected.Check).
type Case struct {
	Name  string
	Args  []string
	Fails bool
}

// Cases are the lines of cases.txt.
type Cases struct {
	Charts, Trees   map[string]Source // by label
	Helm, Kustomize []Case
}

// casesDir is testdata/heldout, as an absolute path.
func casesDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "testdata", "heldout")
}

// read parses casesDir()/cases.txt; a line it does not understand fails tb.
func read(tb testing.TB) Cases {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(casesDir(), "cases.txt"))
	if err != nil {
		tb.Fatal(err)
	}
	c := Cases{Charts: map[string]Source{}, Trees: map[string]Source{}}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 0 || strings.HasPrefix(f[0], "#"):
		case (f[0] == "chart" || f[0] == "tree") && len(f) == 4:
			m := c.Charts
			if f[0] == "tree" {
				m = c.Trees
			}
			m[f[1]] = Source{Module: f[2], Dir: f[3]}
		case len(f) > 4 && strings.HasSuffix(f[0], ":") && f[1] == "fails" && f[2] == "helm" && f[3] == "template":
			c.Helm = append(c.Helm, Case{Name: strings.TrimSuffix(f[0], ":"), Args: f[4:], Fails: true})
		case len(f) > 3 && strings.HasSuffix(f[0], ":") && f[1] == "helm" && f[2] == "template":
			c.Helm = append(c.Helm, Case{Name: strings.TrimSuffix(f[0], ":"), Args: f[3:]})
		case len(f) == 4 && strings.HasSuffix(f[0], ":") && f[1] == "kustomize" && f[2] == "build":
			c.Kustomize = append(c.Kustomize, Case{Name: strings.TrimSuffix(f[0], ":"), Args: f[3:]})
		default:
			tb.Fatalf("cases.txt: line not understood: %q", line)
		}
	}
	return c
}

// Modules downloads module versions (module@version) from the module
// proxy into the module cache, once each, and gives their directories.
type Modules map[string]string

// Path is s's directory on disk, its module downloaded when it is not in
// the module cache yet.
func (m Modules) Path(tb testing.TB, s Source) string {
	tb.Helper()
	dir, ok := m[s.Module]
	if !ok {
		dir = download(tb, s.Module)
		m[s.Module] = dir
	}
	return filepath.Join(dir, filepath.FromSlash(s.Dir))
}

func download(tb testing.TB, modVersion string) string {
	tb.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", modVersion)
	cmd.Dir = tb.TempDir() // outside any module: no go.mod is read or changed
	// auto: a module may need a newer Go than this one just to be read
	cmd.Env = append(os.Environ(), "GO111MODULE=on", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=auto")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &info); err != nil || jerr != nil || info.Dir == "" {
		tb.Fatalf("go mod download %s: %v %s %s", modVersion, err, info.Error, stderr.Bytes())
	}
	return info.Dir
}

// mustRun runs a reference CLI with args in dir, with HOME and Helm's homes in
// a directory of tb, and returns its stdout; a failure fails tb with its
// stderr.
func mustRun(tb testing.TB, dir, bin string, args ...string) []byte {
	tb.Helper()
	out, stderr, err := run(tb, dir, bin, args...)
	if err != nil {
		tb.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, stderr)
	}
	return out
}

func run(tb testing.TB, dir, bin string, args ...string) (stdout, stderr []byte, err error) {
	home := tb.TempDir()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+home, "HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config", "HELM_DATA_HOME="+home+"/data")
	var eb bytes.Buffer
	cmd.Stderr = &eb
	out, err := cmd.Output()
	return out, eb.Bytes(), err
}

// helmRefuses runs helm template with args in dir, which must fail, and
// returns what its message says: the lines of its error, without
// "Error: ", list dashes and trailing colons, and without its hint to use
// --debug.
func helmRefuses(tb testing.TB, helmBin, dir string, args []string) []string {
	tb.Helper()
	_, stderr, err := run(tb, dir, helmBin, append([]string{"template"}, args...)...)
	if err == nil {
		tb.Fatalf("helm template %s succeeded; the case says it fails", strings.Join(args, " "))
	}
	var says []string
	for _, l := range strings.Split(string(stderr), "\n") {
		l = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(l), "Error: "), "- "), ":")
		if l != "" && !strings.HasPrefix(l, "Use --debug flag") {
			says = append(says, l)
		}
	}
	if len(says) == 0 {
		tb.Fatalf("helm template %s failed without a message", strings.Join(args, " "))
	}
	return says
}

// checkRefusal fails tb unless err is the plugin refusing what the CLI
// refused, saying every line of the CLI's message.
func checkRefusal(tb testing.TB, says []string, err error) {
	tb.Helper()
	if err == nil {
		tb.Fatalf("rendered; helm template refuses it: %s", strings.Join(says, " / "))
	}
	msg := err.Error()
	for _, l := range says {
		if !strings.Contains(msg, l) {
			tb.Errorf("the message does not say %q (helm template's): %s", l, msg)
		}
	}
}

// prepareCharts packages every chart of c into dir/charts/<label>.tgz and
// links dir/values to testdata/heldout/values: dir is then where the
// cases' helm template commands run.
func (c Cases) prepareCharts(tb testing.TB, m Modules, dir string) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "charts"), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(casesDir(), "values"), filepath.Join(dir, "values")); err != nil {
		tb.Fatal(err)
	}
	for label, src := range c.Charts {
		packageChart(tb, m.Path(tb, src), filepath.Join(dir, "charts", label+".tgz"))
	}
}

// packageChart writes the chart in dir to the chart archive dest, without
// the dependencies dir does not vendor (helm package refuses those; every
// one of the cases is optional and off by default).
func packageChart(tb testing.TB, dir, dest string) {
	tb.Helper()
	c, err := loader.LoadDir(dir)
	if err != nil {
		tb.Fatalf("loading %s: %v", dir, err)
	}
	have := map[string]bool{}
	for _, d := range c.Dependencies() {
		have[d.Name()] = true
	}
	kept := c.Metadata.Dependencies[:0]
	for _, d := range c.Metadata.Dependencies {
		if have[d.Name] {
			kept = append(kept, d)
		}
	}
	c.Metadata.Dependencies = kept
	c.Lock = nil
	saved, err := chartutil.Save(c, tb.TempDir())
	if err != nil {
		tb.Fatalf("packaging %s: %v", dir, err)
	}
	if err := os.Rename(saved, dest); err != nil {
		tb.Fatal(err)
	}
}

// HelmFlags are the arguments of a case's helm template command.
type HelmFlags struct {
	Release, Chart         string // the chart file, relative to the command's directory
	Namespace, KubeVersion string
	APIVersions            []string
	ValueFiles             []string // relative to the command's directory
	Set, SetJSON           []string
	SetString, SetFile     []string // --set-file paths relative to the command's directory
}

// ParseHelm reads a case's helm template arguments (release, chart, then
// --namespace, --kube-version, --include-crds, -f, --set, --set-json,
// --set-string, --set-file, --api-versions).
func ParseHelm(tb testing.TB, args []string) HelmFlags {
	tb.Helper()
	f := HelmFlags{Release: args[0], Chart: args[1]}
	for i := 2; i < len(args); i++ {
		flag := args[i]
		if flag == "--include-crds" {
			continue
		}
		if i++; i == len(args) {
			tb.Fatalf("%s without a value", flag)
		}
		switch v := args[i]; flag {
		case "--namespace":
			f.Namespace = v
		case "--kube-version":
			f.KubeVersion = v
		case "--api-versions":
			f.APIVersions = append(f.APIVersions, v)
		case "-f":
			f.ValueFiles = append(f.ValueFiles, v)
		case "--set":
			f.Set = append(f.Set, v)
		case "--set-json":
			f.SetJSON = append(f.SetJSON, v)
		case "--set-string":
			f.SetString = append(f.SetString, v)
		case "--set-file":
			f.SetFile = append(f.SetFile, v)
		default:
			tb.Fatalf("flag %s not understood", flag)
		}
	}
	return f
}

// Oracle is what a reference CLI printed for a case: its objects, and the
// values that differed between two of its runs (generated certificates,
// random passwords), by object and path.
type Oracle struct {
	Objects []manifests.Object
	random  map[string]map[string]bool
}

// helmTemplate runs helm template with args in dir twice.
func helmTemplate(tb testing.TB, helmBin, dir string, args []string) *Oracle {
	tb.Helper()
	run := func() []manifests.Object {
		objs, err := manifests.Decode("helm template", mustRun(tb, dir, helmBin, append([]string{"template"}, args...)...))
		if err != nil {
			tb.Fatal(err)
		}
		return objs
	}
	first, second := run(), run()
	if len(first) != len(second) {
		tb.Fatalf("two runs of helm template gave %d and %d objects", len(first), len(second))
	}
	o := &Oracle{Objects: first, random: map[string]map[string]bool{}}
	for i := range first {
		k := manifests.Key(first[i])
		if k != manifests.Key(second[i]) {
			tb.Fatalf("two runs of helm template name object %d %s and %s", i, k, manifests.Key(second[i]))
		}
		if r := differing(first[i], second[i], ""); len(r) > 0 {
			o.random[k] = r
		}
	}
	return o
}

// KustomizeBuild runs kustomize build in dir.
func KustomizeBuild(tb testing.TB, bin, dir string) *Oracle {
	tb.Helper()
	objs, err := manifests.Decode("kustomize build", mustRun(tb, dir, bin, "build", "."))
	if err != nil {
		tb.Fatal(err)
	}
	return &Oracle{Objects: objs}
}

// Check fails tb unless got holds the oracle's objects in its order, the
// values that differed between the CLI's runs compared by presence.
func (o *Oracle) Check(tb testing.TB, got []manifests.Object) {
	tb.Helper()
	n := 0
	for _, objs := range [][]manifests.Object{o.Objects, got} {
		for _, obj := range objs {
			if r := o.random[manifests.Key(obj)]; r != nil {
				mask(obj, r, "")
				n += len(r)
			}
		}
	}
	if n > 0 {
		tb.Logf("%d values differ between two runs of the CLI: compared by presence", n/2)
	}
	manifeststest.Equal(tb, got, o.Objects)
	if len(got) == len(o.Objects) {
		for i := range got {
			if gk, wk := manifests.Key(got[i]), manifests.Key(o.Objects[i]); gk != wk {
				tb.Errorf("object %d is %s, the CLI's is %s", i, gk, wk)
				break
			}
		}
	}
}

// differing are the paths of the values a and b (one object of two runs)
// differ in.
func differing(a, b any, at string) map[string]bool {
	out := map[string]bool{}
	switch av := a.(type) {
	case map[string]any:
		if bv, ok := b.(map[string]any); ok && len(av) == len(bv) {
			for k, e := range av {
				for p := range differing(e, bv[k], at+"/"+k) {
					out[p] = true
				}
			}
			return out
		}
	case []any:
		if bv, ok := b.([]any); ok && len(av) == len(bv) {
			for i, e := range av {
				for p := range differing(e, bv[i], fmt.Sprintf("%s/%d", at, i)) {
					out[p] = true
				}
			}
			return out
		}
	}
	if !reflect.DeepEqual(a, b) {
		out[at] = true
	}
	return out
}

// mask replaces the values at paths in v with a marker.
func mask(v any, paths map[string]bool, at string) any {
	if paths[at] {
		return "<differs between runs of the CLI>"
	}
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = mask(e, paths, at+"/"+k)
		}
	case []any:
		for i, e := range v {
			v[i] = mask(e, paths, fmt.Sprintf("%s/%d", at, i))
		}
	}
	return v
}

// TreeTar is a tar of the regular files below root, as a kustomization
// resource holds a tree.
func TreeTar(tb testing.TB, root string) []byte {
	tb.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)], err = os.ReadFile(p)
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	b, err := ocmbuild.TarFiles(files, false)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// Tree is the tree and entry path a kustomize case builds ("<label>/<entry>").
func (c Cases) Tree(tb testing.TB, k Case) (label string, src Source, entry string) {
	tb.Helper()
	label, entry, _ = strings.Cut(k.Args[0], "/")
	src, ok := c.Trees[label]
	if !ok {
		tb.Fatalf("%s: no tree %s", k.Name, label)
	}
	return label, src, entry
}

// HelmCases skips tb unless make test-heldout named the helm CLI
// (envHelm); it returns the CLI, the cases, and a directory where their
// charts are packaged and their commands run (prepareCharts).
func HelmCases(tb testing.TB) (helmBin string, c Cases, dir string) {
	tb.Helper()
	if helmBin = os.Getenv(envHelm); helmBin == "" {
		tb.Skip(envHelm + " is unset: make test-heldout (part of make test) builds the helm v4 CLI and runs this comparison")
	}
	c, dir = read(tb), tb.TempDir()
	c.prepareCharts(tb, Modules{}, dir)
	return helmBin, c, dir
}

// KustomizeCases skips tb unless make test-heldout named the kustomize CLI
// (envKustomize); it returns the CLI and the cases.
func KustomizeCases(tb testing.TB) (kustomizeBin string, c Cases) {
	tb.Helper()
	if kustomizeBin = os.Getenv(envKustomize); kustomizeBin == "" {
		tb.Skip(envKustomize + " is unset: make test-heldout (part of make test) builds the kustomize CLI and runs this comparison")
	}
	return kustomizeBin, read(tb)
}

// Expected is what a render of a helm case must give: helm template's
// objects, or its refusal.
type Expected struct {
	oracle *Oracle
	says   []string // the refusal's message, for a case that fails
}

// HelmExpects runs a helm case's command in dir (helmTemplate, or
// helmRefuses for a case that fails).
func HelmExpects(tb testing.TB, helmBin, dir string, c Case) *Expected {
	tb.Helper()
	if c.Fails {
		return &Expected{says: helmRefuses(tb, helmBin, dir, c.Args)}
	}
	return &Expected{oracle: helmTemplate(tb, helmBin, dir, c.Args)}
}

// Check fails tb unless a render's objects and error are what was
// expected (Oracle.Check, or checkRefusal).
func (e *Expected) Check(tb testing.TB, got []manifests.Object, err error) {
	tb.Helper()
	if e.oracle == nil {
		checkRefusal(tb, e.says, err)
		return
	}
	if err != nil {
		tb.Fatal(err)
	}
	e.oracle.Check(tb, got)
}
