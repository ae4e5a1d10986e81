// Package heldout reads testdata/heldout/cases.txt for the held-out tests
// (make test-heldout): upstream charts and kustomize trees the renderers
// were never tuned on, taken at pinned versions from the Go modules that
// ship them, and the reference CLI commands (helm template, kustomize
// build) each case is compared with.
package heldout

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Source is a chart or tree line: a directory of a module version.
type Source struct {
	Module string // module@version
	Dir    string // slash-separated, inside the module
}

// Case is a case line: its name and the reference CLI's arguments after
// the command ("helm template" or "kustomize build").
type Case struct {
	Name string
	Args []string
}

// Cases are the lines of cases.txt.
type Cases struct {
	Charts, Trees   map[string]Source // by label
	Helm, Kustomize []Case
}

// Dir is testdata/heldout, as an absolute path.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "testdata", "heldout")
}

// Read parses Dir()/cases.txt; a line it does not understand fails tb.
func Read(tb testing.TB) Cases {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(Dir(), "cases.txt"))
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

// Run runs a reference CLI with args in dir, with HOME and Helm's homes in
// a directory of tb, and returns its stdout; a failure fails tb with its
// stderr.
func Run(tb testing.TB, dir, bin string, args ...string) []byte {
	tb.Helper()
	home := tb.TempDir()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+home, "HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config", "HELM_DATA_HOME="+home+"/data")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, stderr.Bytes())
	}
	return out
}
