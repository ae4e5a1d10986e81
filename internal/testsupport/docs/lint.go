package docs

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// Page follows a reader through the shell blocks of one page, in order: the
// directory they are in, the namespaces and Helm repositories they created,
// whether they built or installed the plugin. Lint checks what cannot run
// without a cluster or network against that state.
type Page struct {
	// Root is the repository the reader works in.
	Root string
	// Kustomize builds a kustomization directory offline (nil: not checked).
	Kustomize func(dir string) error

	cwd        string // relative to Root, slash-separated; "" is Root
	lost       bool   // a cd the lint cannot follow: directory checks stop
	namespaces map[string]bool
	helmRepos  map[string]bool
	built      bool // bin/argocd-ocm-plugin exists (make build, make demo)
	installed  bool // the plugin is on PATH (make install)
	argoCD     bool // Argo CD's install.yaml is in manifests/argocd (make argocd-manifests)
}

var (
	assignmentRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)
	heredocRE    = regexp.MustCompile(`<<-?\s*['"]?([A-Za-z_][A-Za-z0-9_]*)['"]?`)
	separatorRE  = regexp.MustCompile(`&&|\|\||;|\|`)
	chartRefRE   = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*/[a-z0-9][a-z0-9-]*$`)
	// The resource of manifests/argocd that make argocd-manifests writes.
	argoInstallRE = regexp.MustCompile(`(?m)^\s*-\s*argo-cd-v[0-9.]+/install\.yaml\s*$`)
)

const pluginBinary = "argocd-ocm-plugin"

// Lint checks one shell block and advances the page's state past it.
func (p *Page) Lint(b Block) []error {
	if p.namespaces == nil {
		p.namespaces, p.helmRepos = map[string]bool{}, map[string]bool{}
	}
	var errs []error
	fail := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{b}, a...)...))
	}
	for _, line := range logicalLines(b.Text) {
		subshell := strings.HasPrefix(strings.TrimSpace(line), "(")
		for _, c := range separatorRE.Split(line, -1) {
			words := strings.Fields(strings.NewReplacer("(", " ", ")", " ").Replace(c))
			for len(words) > 0 && assignmentRE.MatchString(words[0]) {
				words = words[1:]
			}
			if len(words) == 0 {
				continue
			}
			switch cmd, args := words[0], words[1:]; {
			case cmd == "cd":
				if !subshell {
					p.cd(args, fail)
				}
			case cmd == "make":
				if p.cwd == "" && !p.lost && (len(args) == 0 || contains(args, "build") || contains(args, "demo") || contains(args, "all")) {
					p.built = true
				}
				if contains(args, "install") {
					p.installed = true
				}
				if p.cwd == "" && !p.lost && contains(args, "argocd-manifests") {
					p.argoCD = true
				}
			case cmd == pluginBinary || cmd == "argocd-ocm-client":
				if !p.installed {
					fail("%s is not on PATH (nothing on this page installs it): write bin/%s after make build, or run make install first", cmd, cmd)
				}
			case path.Base(cmd) == pluginBinary && !p.lost && !strings.HasPrefix(cmd, "/"):
				switch rel := path.Clean(path.Join(p.cwd, cmd)); {
				case rel != "bin/"+pluginBinary:
					fail("%s: from %q this is not the repository's bin/%s", cmd, "./"+p.cwd, pluginBinary)
				case !p.built:
					fail("%s does not exist yet: run make build first", cmd)
				}
			case cmd == "kubectl":
				p.kubectl(args, fail)
			case cmd == "helm":
				p.helm(args, fail)
			}
		}
	}
	return errs
}

func (p *Page) cd(args []string, fail func(string, ...any)) {
	if len(args) == 0 || strings.ContainsAny(args[0], "$~`") || args[0] == "-" {
		p.lost = true
		return
	}
	if p.lost {
		return
	}
	next := path.Clean(path.Join(p.cwd, args[0]))
	if strings.HasPrefix(args[0], "/") || next == ".." || strings.HasPrefix(next, "../") {
		p.lost = true
		return
	}
	if fi, err := os.Stat(filepath.Join(p.Root, filepath.FromSlash(next))); err != nil || !fi.IsDir() {
		fail("cd %s: no such directory from %q, where the previous blocks left the reader (use a subshell, or go -C DIR)", args[0], "./"+p.cwd)
		p.lost = true
		return
	}
	if next == "." {
		next = ""
	}
	p.cwd = next
}

// local is a path as the reader's shell sees it, or "" when it is not a
// local file the lint can check (a URL, stdin, a variable).
func (p *Page) local(name string) string {
	if p.lost || name == "-" || strings.Contains(name, "://") || strings.ContainsAny(name, "$~`") {
		return ""
	}
	if filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(p.Root, filepath.FromSlash(p.cwd), name)
}

func (p *Page) kubectl(args []string, fail func(string, ...any)) {
	ns := flagValue(args, "-n", "--namespace")
	if len(args) >= 3 && args[0] == "create" && (args[1] == "namespace" || args[1] == "ns") {
		p.namespaces[args[2]] = true
		return
	}
	// Only what creates objects needs the namespace to exist first; a
	// command on objects that exist (get, logs, patch, …) implies it does.
	creates := len(args) > 0 && (args[0] == "apply" || args[0] == "create" || args[0] == "replace")
	if ns != "" && creates && !p.namespaces[ns] {
		fail("kubectl -n %s: the namespace is used before this page creates it (kubectl create namespace %s)", ns, ns)
	}
	if contains(args, "apply") && contains(args, "--server-side") && !contains(args, "--force-conflicts") {
		fail("kubectl apply --server-side without --force-conflicts: re-applying over fields another manager owns (Argo CD's own, kubectl's client-side apply) fails")
	}
	if dir := flagValue(args, "-k", "--kustomize"); dir != "" {
		// make manifests writes bin/manifests: manifests/ with the image
		// pinned, nothing else changed. A fresh checkout has only the source.
		pinned := false
		if rest, ok := strings.CutPrefix(filepath.ToSlash(filepath.Clean(dir)), "bin/manifests"); ok && (rest == "" || strings.HasPrefix(rest, "/")) {
			dir, pinned = "manifests"+rest, true
		}
		if l := p.local(dir); l != "" && p.Kustomize != nil {
			if err := p.Kustomize(l); err != nil {
				fail("kubectl -k %s does not build offline: %v", dir, err)
			}
		}
		// Argo CD's install.yaml is not committed (make manifests writes
		// it with bin/manifests); a checkout builds manifests/argocd after
		// make argocd-manifests.
		if l := p.local(dir); l != "" && !pinned && !p.argoCD {
			if k, err := os.ReadFile(filepath.Join(l, "kustomization.yaml")); err == nil && argoInstallRE.Match(k) {
				fail("kubectl -k %s installs Argo CD's install.yaml, which a checkout does not have: run make argocd-manifests first", dir)
			}
		}
	}
	for _, f := range flagValues(args, "-f", "--filename") {
		if l := p.local(f); l != "" {
			if _, err := os.Stat(l); err != nil {
				fail("kubectl -f %s: no such file from %q", f, "./"+p.cwd)
			}
		}
	}
}

func (p *Page) helm(args []string, fail func(string, ...any)) {
	if len(args) >= 3 && args[0] == "repo" && args[1] == "add" {
		p.helmRepos[args[2]] = true
		return
	}
	if len(args) == 0 || (args[0] != "install" && args[0] != "upgrade" && args[0] != "template") {
		return
	}
	if ns := flagValue(args, "-n", "--namespace"); ns != "" && contains(args, "--create-namespace") {
		p.namespaces[ns] = true
	}
	for _, a := range args[1:] {
		if !chartRefRE.MatchString(a) {
			continue
		}
		if l := p.local(a); l != "" {
			if _, err := os.Stat(l); err == nil {
				continue // a chart directory
			}
		}
		repo := a[:strings.Index(a, "/")]
		if !p.helmRepos[repo] {
			fail("helm %s %s: the repository %q is not added on this page (helm repo add %s URL)", args[0], a, repo, repo)
		}
		if flagValue(args, "--version", "--version") == "" {
			fail("helm %s %s without --version: the chart (and the Argo CD it installs) is not pinned", args[0], a)
		}
	}
	for _, f := range flagValues(args, "-f", "--values") {
		if l := p.local(f); l != "" {
			if _, err := os.Stat(l); err != nil {
				fail("helm -f %s: no such file from %q", f, "./"+p.cwd)
			}
		}
	}
}

// logicalLines joins continued lines, drops comments and here-documents.
func logicalLines(text string) []string {
	var out []string
	var cur strings.Builder
	heredoc := ""
	for _, l := range strings.Split(text, "\n") {
		if heredoc != "" {
			if strings.TrimSpace(l) == heredoc {
				heredoc = ""
			}
			continue
		}
		l = stripComment(l)
		if m := heredocRE.FindStringSubmatch(l); m != nil {
			heredoc = m[1]
		}
		if strings.HasSuffix(l, "\\") {
			cur.WriteString(strings.TrimSuffix(l, "\\"))
			cur.WriteString(" ")
			continue
		}
		cur.WriteString(l)
		if s := strings.TrimSpace(cur.String()); s != "" {
			out = append(out, s)
		}
		cur.Reset()
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	return out
}

// stripComment drops a # comment that starts a word outside quotes.
func stripComment(l string) string {
	var quote rune
	for i, r := range l {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (i == 0 || l[i-1] == ' ' || l[i-1] == '\t'):
			return l[:i]
		}
	}
	return l
}

func contains(args []string, s string) bool {
	for _, a := range args {
		if a == s {
			return true
		}
	}
	return false
}

// flagValue is the value of the first of the flags (-n X, --namespace X,
// --namespace=X), "" if absent.
func flagValue(args []string, short, long string) string {
	if v := flagValues(args, short, long); len(v) > 0 {
		return v[0]
	}
	return ""
}

func flagValues(args []string, short, long string) []string {
	var out []string
	for i, a := range args {
		switch {
		case (a == short || a == long) && i+1 < len(args):
			out = append(out, args[i+1])
		case strings.HasPrefix(a, long+"="):
			out = append(out, strings.TrimPrefix(a, long+"="))
		}
	}
	return out
}
