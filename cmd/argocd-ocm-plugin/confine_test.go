package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The password of the sidecar's docker config in the hostile sandboxes: it
// must never reach any output.
const sidecarPassword = "hunter2-sidecar-password"

// hostileSandbox is base/app, an Application's directory as argocd-cmp-server
// unpacks it (a CTF, values, links committed in git, a FIFO), beside
// base/outside: another tenant's private CTF, the sidecar's docker config, a
// FIFO. Without targets, outside is empty: a refusal must read the same.
func hostileSandbox(t *testing.T, targets bool) (base, app string) {
	t.Helper()
	base = t.TempDir()
	app, out := filepath.Join(base, "app"), filepath.Join(base, "outside")
	copyTree(t, demoRepo, filepath.Join(app, "ctf"))
	writeTestFile(t, filepath.Join(app, "values", "prod.yaml"), "replicaCount: 4\n")
	must(t, os.MkdirAll(out, 0o755))
	must(t, syscall.Mkfifo(filepath.Join(app, "fifo"), 0o644))
	if targets {
		copyTree(t, demoRepo, filepath.Join(out, "private-ctf"))
		writeTestFile(t, filepath.Join(out, "config.json"), `{"auths":{"registry.example.test":{"username":"robot","password":"`+sidecarPassword+`"}}}`)
		writeTestFile(t, filepath.Join(out, "def.yaml"), "apiVersion: argocd-ocm-plugin.io/v1alpha1\nkind: DeploymentDefinition\n")
		must(t, syscall.Mkfifo(filepath.Join(out, "fifo"), 0o644))
	}
	for link, target := range map[string]string{
		"link-ctf":        "../outside/private-ctf",
		"link-ctf-abs":    filepath.Join(out, "private-ctf"),
		"link-chain":      "link-chain-2",
		"link-chain-2":    "values/../../outside/private-ctf",
		"out-dir":         "../outside",
		"link-fifo":       "../outside/fifo",
		"link-in-fifo":    "fifo",
		"link-zero":       "/dev/zero",
		"link-proc":       "/proc/self/fd/1",
		"link-config":     "../outside/config.json",
		"link-config-abs": filepath.Join(out, "config.json"),
		"link-def":        "../outside/def.yaml",
		"ctf-alias":       "ctf",
		"prod-alias.yaml": "values/prod.yaml",
	} {
		must(t, os.Symlink(target, filepath.Join(app, link)))
	}
	return base, app
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

type hostileCase struct {
	name  string
	env   []string // overrides of the base environment; BASE is the sandbox
	param string   // the parameter the refusal names
	want  string   // the refusal (default: not a file or directory inside)
}

const refusal = "not a file or directory inside the Application's directory"

func hostileCases() []hostileCase {
	repo := func(name, value string) hostileCase {
		return hostileCase{name: "repository " + name, env: []string{"ARGOCD_ENV_REPOSITORY", value}, param: "repository"}
	}
	values := func(name, value string) hostileCase {
		return hostileCase{name: "value-files " + name, env: []string{"ARGOCD_ENV_VALUE_FILES", value}, param: "value-files"}
	}
	cs := []hostileCase{
		repo("../", "../outside/private-ctf"),
		repo("absolute", "BASE/outside/private-ctf"),
		repo(".. in the middle", "ctf/../../outside/private-ctf"),
		repo("//", "ctf//../..//outside/private-ctf"),
		repo("file:// relative", "file://../outside/private-ctf"),
		repo("file:// absolute", "file://BASE/outside/private-ctf"),
		repo("ctf::", "ctf::../outside/private-ctf"),
		repo("CommonTransportFormat::", "CommonTransportFormat::BASE/outside/private-ctf"),
		repo("OCM spec filePath", "{type: CommonTransportFormat/v1, filePath: BASE/outside/private-ctf, fileFormat: directory}"),
		repo("OCM spec YAML", "type: CTF\nfilePath: ../outside/private-ctf\n"),
		repo("link outside", "link-ctf"),
		repo("absolute link", "link-ctf-abs"),
		repo("link chain", "link-chain"),
		repo("directory link escaping", "out-dir/private-ctf"),
		repo("link to a FIFO", "link-fifo"),
		repo("FIFO", "fifo"),
		repo("link to a FIFO inside", "link-in-fifo"),
		repo("/dev/zero", "/dev/zero"),
		repo("/proc/self/fd/1", "/proc/self/fd/1"),
		repo("link to /dev/zero", "link-zero"),
		repo("link to /proc/self/fd/1", "link-proc"),
		values("link to the docker config", "link-config"),
		values("absolute link to the docker config", "link-config-abs"),
		values("directory link escaping", "out-dir/config.json"),
		values("../", "../outside/config.json"),
		values("absolute", "BASE/outside/config.json"),
		values("link to a FIFO", "link-fifo"),
		values("/proc/self/fd/1", "/proc/self/fd/1"),
		{name: "definition link outside", env: []string{"ARGOCD_ENV_DEFINITION", "link-def"}, param: "definition"},
		{name: "definition to the docker config", env: []string{"ARGOCD_ENV_DEFINITION", "out-dir/config.json"}, param: "definition"},
		{name: "platform-config link to the docker config", param: "platform-config",
			env: []string{"ARGOCD_ENV_COMPONENT", "example.com/demo/platform", "ARGOCD_APP_PARAMETERS", `[{"name":"platform-config","array":["link-config"]}]`}},
	}
	for _, dots := range []string{"\u2024\u2024", "\uff0e\uff0e"} { // look-alikes: no escape, just missing
		c := repo("look-alike dots "+dots, dots+"/outside/private-ctf")
		c.want = "no such file or directory in the Application's directory"
		cs = append(cs, c)
	}
	return cs
}

func (c hostileCase) environ(base string) map[string]string {
	m := map[string]string{"ARGOCD_APP_NAME": "tenant-a", "ARGOCD_APP_NAMESPACE": "tenant-a", "ARGOCD_ENV_REPOSITORY": "ctf",
		"ARGOCD_ENV_COMPONENT": "example.com/demo/podinfo", "ARGOCD_ENV_VERSION": "1.0.0"}
	for i := 0; i < len(c.env); i += 2 {
		m[c.env[i]] = strings.ReplaceAll(c.env[i+1], "BASE", base)
	}
	return m
}

// inTime fails the test when fn does not return promptly: a FIFO or a device
// opened for reading would block past every deadline.
func inTime(t *testing.T, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("blocked: no answer in 20 s")
	}
}

// Every Application-controlled path, in every form, through the real
// generate command in a process (working directory: the Application's) and
// through the render server: refused, nothing on stdout, exactly one stderr
// line naming the parameter, the same line whether the outside target exists
// or not, no secret, promptly.
func TestGenerateConfinesEveryApplicationPath(t *testing.T) {
	socket, fp := startServer(t)
	withBase, withApp := hostileSandbox(t, true)
	withoutBase, withoutApp := hostileSandbox(t, false)
	for _, c := range hostileCases() {
		t.Run(c.name, func(t *testing.T) {
			want := c.want
			if want == "" {
				want = refusal
			}
			var lines []string
			for _, sb := range []struct{ base, app string }{{withBase, withApp}, {withoutBase, withoutApp}} {
				e := c.environ(sb.base)
				var stdout, stderr bytes.Buffer
				var code int
				inTime(t, func() {
					t.Chdir(sb.app)
					code = run([]string{"generate"}, &stdout, &stderr, env(e))
				})
				var res *resultOf
				inTime(t, func() {
					r := viaServer(t, socket, fp, sb.app, []string{"generate"}, e)
					res = &resultOf{r.Exit, r.Stdout, string(r.Stderr)}
				})
				for _, got := range []resultOf{{code, stdout.Bytes(), stderr.String()}, *res} {
					if got.exit == 0 || len(got.stdout) != 0 {
						t.Fatalf("not refused: exit %d, %d bytes on stdout, stderr %q", got.exit, len(got.stdout), got.stderr)
					}
					if strings.Count(got.stderr, "\n") != 1 || !strings.HasSuffix(got.stderr, "\n") {
						t.Fatalf("stderr is not one line: %q", got.stderr)
					}
					if !strings.Contains(got.stderr, "application tenant-a") || !strings.Contains(got.stderr, c.param+` "`) || !strings.Contains(got.stderr, want) {
						t.Fatalf("stderr %q does not name the parameter %s and say %q", got.stderr, c.param, want)
					}
					if strings.Count(got.stderr, "invalid input") > 1 {
						t.Fatalf("stderr repeats itself: %q", got.stderr)
					}
					if strings.Contains(got.stderr, sidecarPassword) || strings.Contains(got.stderr, "robot") {
						t.Fatalf("stderr leaks the docker config: %q", got.stderr)
					}
				}
				if res.stderr != stderr.String() {
					t.Fatalf("server and process differ: %q, %q", res.stderr, stderr.String())
				}
				lines = append(lines, strings.ReplaceAll(stderr.String(), sb.base, "BASE"))
			}
			if lines[0] != lines[1] {
				t.Fatalf("an oracle: with the target %q, without %q", lines[0], lines[1])
			}
		})
	}
}

type resultOf struct {
	exit   int
	stdout []byte
	stderr string
}

// Links that stay inside the Application's directory keep working, and a
// value file read through one is applied.
func TestGenerateFollowsLinksInsideTheApplication(t *testing.T) {
	socket, fp := startServer(t)
	_, app := hostileSandbox(t, true)
	e := map[string]string{"ARGOCD_APP_NAME": "tenant-a", "ARGOCD_APP_NAMESPACE": "tenant-a", "ARGOCD_ENV_REPOSITORY": "ctf-alias",
		"ARGOCD_ENV_COMPONENT": "example.com/demo/podinfo", "ARGOCD_ENV_VERSION": "1.0.0", "ARGOCD_ENV_VALUE_FILES": "prod-alias.yaml"}
	for _, form := range []string{"ctf-alias", "./ctf", "file://ctf", "ctf::ctf", "{type: CommonTransportFormat/v1, filePath: ctf-alias}"} {
		e["ARGOCD_ENV_REPOSITORY"] = form
		var stdout, stderr bytes.Buffer
		t.Chdir(app)
		if code := run([]string{"generate"}, &stdout, &stderr, env(e)); code != 0 {
			t.Fatalf("%s: exit %d: %s", form, code, stderr.String())
		}
		if !strings.Contains(generated(t, stdout.Bytes()), "replicas: 4") {
			t.Fatalf("%s: the value file was not applied", form)
		}
		if res := viaServer(t, socket, fp, app, []string{"generate"}, e); res.Exit != 0 || !bytes.Equal(res.Stdout, stdout.Bytes()) {
			t.Fatalf("%s: server: exit %d: %s", form, res.Exit, res.Stderr)
		}
	}
}

// A value is a registry only when it looks like one; a mistyped CTF path
// says it does not exist (render, for people, and generate), with no lookup.
func TestMistypedRepositoryIsAMissingPath(t *testing.T) {
	t.Chdir("../..") // the repository root: testdata/demo/ctf exists
	var stdout, stderr bytes.Buffer
	code := run([]string{"render", "--repository", "testdata/demo/ctff", "--component", "example.com/demo/podinfo", "--version", "1.0.0"}, &stdout, &stderr, env(nil))
	msg := stderr.String()
	if code == 0 || stdout.Len() != 0 || strings.Count(msg, "\n") != 1 || !strings.Contains(msg, "testdata/demo/ctff") ||
		!strings.Contains(msg, "no such file or directory") || strings.Contains(msg, "lookup") || strings.Contains(msg, "registry testdata") {
		t.Fatalf("render: exit %d, stderr %q", code, msg)
	}
	stderr.Reset()
	code = run([]string{"generate"}, &stdout, &stderr, env(map[string]string{"ARGOCD_APP_NAME": "shop",
		"ARGOCD_ENV_REPOSITORY": "testdata/demo/ctff", "ARGOCD_ENV_COMPONENT": "example.com/demo/podinfo", "ARGOCD_ENV_VERSION": "1.0.0"}))
	msg = stderr.String()
	if code == 0 || stdout.Len() != 0 || strings.Count(msg, "\n") != 1 ||
		!strings.Contains(msg, `repository "testdata/demo/ctff": no such file or directory in the Application's directory`) || strings.Contains(msg, "lookup") {
		t.Fatalf("generate: exit %d, stderr %q", code, msg)
	}
	// What looks like a registry is one: a connection is tried (and refused
	// on a closed loopback port, which the operator allowed), whatever
	// exists on disk.
	for _, r := range []string{"localhost:1/ocm", "127.0.0.1:1/ocm", "http://127.0.0.1:1/ocm", "oci://127.0.0.1:1/ocm",
		"{type: OCIRegistry, baseUrl: 'http://127.0.0.1:1', subPath: ocm}", "OCIRegistry::http://127.0.0.1:1/ocm"} {
		stderr.Reset()
		code = run([]string{"generate"}, &stdout, &stderr, env(map[string]string{"ARGOCD_APP_NAME": "shop",
			"ARGOCD_ENV_REPOSITORY": r, "ARGOCD_ENV_COMPONENT": "example.com/demo/podinfo", "ARGOCD_ENV_VERSION": "1.0.0",
			"ARGOCD_OCM_ALLOW_ADDRESSES": "127.0.0.1"}))
		msg = stderr.String()
		if code == 0 || stdout.Len() != 0 || !strings.Contains(msg, "registry ") || !strings.Contains(msg, "no OCI registry answered") ||
			strings.Contains(msg, "no such file") || strings.Contains(msg, "{") {
			t.Errorf("%s: exit %d, stderr %q", r, code, msg)
		}
	}
}

// The dynamic parameters command reads the repository the same way.
func TestParametersConfinesTheRepository(t *testing.T) {
	socket, fp := startServer(t)
	base, app := hostileSandbox(t, true)
	for _, repo := range []string{"link-ctf", base + "/outside/private-ctf", "file://../outside/private-ctf", "link-fifo", "/proc/self/fd/1"} {
		e := map[string]string{"ARGOCD_APP_NAME": "tenant-a", "ARGOCD_ENV_REPOSITORY": repo,
			"ARGOCD_ENV_COMPONENT": "example.com/demo/podinfo", "ARGOCD_ENV_VERSION": "1.0.0"}
		var stdout, stderr bytes.Buffer
		var code int
		var res *resultOf
		inTime(t, func() {
			t.Chdir(app)
			code = run([]string{"parameters"}, &stdout, &stderr, env(e))
			r := viaServer(t, socket, fp, app, []string{"parameters"}, e)
			res = &resultOf{r.Exit, r.Stdout, string(r.Stderr)}
		})
		for _, got := range []resultOf{{code, stdout.Bytes(), stderr.String()}, *res} {
			if got.exit == 0 || len(got.stdout) != 0 || strings.Count(got.stderr, "\n") != 1 || !strings.Contains(got.stderr, `repository "`) ||
				!strings.Contains(got.stderr, refusal) {
				t.Errorf("%s: exit %d, %d bytes on stdout, stderr %q", repo, got.exit, len(got.stdout), got.stderr)
			}
		}
	}
}
