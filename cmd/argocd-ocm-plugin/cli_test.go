package main

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/examples"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
)

// Help and completion are output people pipe (--help | less, completion
// scripts): stdout, as cobra intends. Errors stay one line on stderr.
func TestHelpAndCompletionOnStdout(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"render", "--help"}, {"help", "generate"}, {"completion", "bash"}, {"completion", "zsh"}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr, env(nil)); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
		}
		if stdout.Len() == 0 || stderr.Len() != 0 {
			t.Errorf("%v: stdout %d bytes, stderr %q", args, stdout.Len(), stderr.String())
		}
	}
	var stdout, stderr bytes.Buffer
	run([]string{"render", "--help"}, &stdout, &stderr, env(nil))
	if !strings.Contains(stdout.String(), "--repository") || !strings.Contains(stdout.String(), "--verbose") {
		t.Errorf("render help lacks flags:\n%s", stdout.String())
	}
	stdout.Reset()
	run([]string{"completion", "bash"}, &stdout, &stderr, env(nil))
	if !strings.Contains(stdout.String(), "bash completion") {
		t.Errorf("not a bash completion script: %.80q", stdout.String())
	}
}

// What people get wrong, and the one line that tells them what to do.
func TestCLIMistakes(t *testing.T) {
	dir := t.TempDir()
	random := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(random, bytes.Repeat([]byte("not an archive\n"), 100), 0o644); err != nil {
		t.Fatal(err)
	}
	demo := []string{"render", "--repository", demoRepo, "--version", "1.0.0"}
	for _, tc := range []struct {
		name     string
		args     []string
		mentions []string
		absent   []string
	}{
		{"extra argument", []string{"render", "--repository", demoRepo, "podinfo"},
			[]string{`unexpected argument "podinfo"`, "render takes flags only"}, []string{"unknown command"}},
		{"extra argument to generate", []string{"generate", "x"}, []string{`unexpected argument "x"`}, nil},
		{"mistyped component", append(demo, "--component", "example.com/demo/podinf"),
			[]string{"example.com/demo/podinf not found", "did you mean example.com/demo/podinfo?"}, []string{"catalog"}},
		{"mistyped domain", append(demo, "--component", "exmaple.com/demo/catalog"),
			[]string{"did you mean example.com/demo/catalog?"}, nil},
		{"unrelated component", append(demo, "--component", "example.com/other/thing"),
			[]string{"none with a similar name"}, []string{"did you mean"}},
		{"missing version names no component", []string{"render", "--repository", demoRepo, "--component", "example.com/demo/podinfo", "--version", "9.9.9"},
			[]string{"available: 1.0.0"}, []string{"did you mean", "similar"}},
		{"random file as repository", []string{"render", "--repository", random, "--component", "a", "--version", "1"},
			[]string{"not a CTF or component archive", "a repository is a CTF or component archive (directory, tar or tgz), an OCI registry"}, nil},
		{"values file", append(demo, "--component", "example.com/demo/podinfo", "-f", filepath.Join(dir, "missing.yaml")),
			[]string{"invalid input: value-files", "missing.yaml", "no such file"}, []string{"invalid input: invalid input"}},
		{"set", append(demo, "--component", "example.com/demo/podinfo", "--set", "a[x]=b"),
			[]string{"invalid input: --set a[x]=b"}, []string{"invalid input: invalid input"}},
		{"path on a chart", append(demo, "--component", "example.com/demo/podinfo", "--path", "overlays/prod"),
			[]string{`path "overlays/prod"`, "resource chart is a helmChart", "directoryTree"}, nil},
		{"platform without source", []string{"render", "--repository", demoRepo, "--component", "example.com/demo/platform", "--version", "1.0.0", "--release-name", "idp"},
			[]string{"ARGOCD_APP_SOURCE_REPO_URL, or --source-repo-url"}, nil},
		{"bad log level", append(demo, "--component", "example.com/demo/podinfo"), nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := env(nil)
			if tc.name == "bad log level" {
				e = env(map[string]string{envLogLevel: "loud"})
				tc.mentions = []string{`ARGOCD_OCM_LOG_LEVEL="loud": want debug, info, warn or error`}
			}
			var stdout, stderr bytes.Buffer
			if code := run(tc.args, &stdout, &stderr, e); code == 0 {
				t.Fatal("exit 0")
			}
			msg := stderr.String()
			if stdout.Len() != 0 || strings.Count(msg, "\n") != 1 {
				t.Fatalf("stdout %q, stderr not one line: %q", stdout.String(), msg)
			}
			for _, m := range tc.mentions {
				if !strings.Contains(msg, m) {
					t.Errorf("stderr %q lacks %q", msg, m)
				}
			}
			for _, m := range tc.absent {
				if strings.Contains(msg, m) {
					t.Errorf("stderr %q has %q", msg, m)
				}
			}
		})
	}
}

func TestClosestNames(t *testing.T) {
	names := []string{"example.com/demo/podinfo", "example.com/demo/podinfo-extras", "example.com/demo/catalog", "example.com/demo/platform"}
	for _, tc := range []struct {
		name string
		want string
	}{
		{"example.com/demo/podinf", "example.com/demo/podinfo"},
		{"example.com/demo/podinfo-extra", "example.com/demo/podinfo-extras"},
		{"example.com/demo/platfrom", "example.com/demo/platform"},
		{"example.com/demo/x", ""},
		{"example.com/demo/podinfo", ""}, // the name itself is no suggestion
	} {
		if got := strings.Join(closestNames(tc.name, names, 3), ","); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

// -v logs what happened (repository, resolution, registry requests, cache
// hits, timings) on stderr; never the credentials it used. Without -v a
// successful render prints nothing on stderr.
func TestVerboseLogsWithoutCredentials(t *testing.T) {
	const user, pass = "robot", "s3cr3t-Pa55w0rd-4711"
	comps, err := examples.Demo("../../testdata/src")
	if err != nil {
		t.Fatal(err)
	}
	reg := registrytest.Start(t, registrytest.WithBasicAuth(user, pass))
	reg.Push(t, "ocm", comps...)
	hostVar := strings.NewReplacer(".", "_", ":", "_").Replace(reg.Host)
	t.Setenv("ARGOCD_OCM_REGISTRY_"+hostVar+"_USERNAME", user)
	t.Setenv("ARGOCD_OCM_REGISTRY_"+hostVar+"_PASSWORD", pass)
	// Credentials go over plain HTTP only to hosts the operator lists.
	sidecarEnv := env(map[string]string{"ARGOCD_OCM_PLAIN_HTTP": reg.Host})
	t.Setenv("ARGOCD_OCM_CACHE_DIR", t.TempDir())
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	args := []string{"render", "--repository", "http://" + reg.Host + "/ocm", "--component", examples.Podinfo, "--version", "1.0.0"}

	var quiet, quietErr bytes.Buffer
	if code := run(args, &quiet, &quietErr, sidecarEnv); code != 0 {
		t.Fatalf("exit %d: %s", code, quietErr.String())
	}
	if quietErr.Len() != 0 {
		t.Errorf("stderr without -v: %q", quietErr.String())
	}
	var logs string
	for i := 0; i < 2; i++ { // the second run reads the cache the first filled
		var stdout, stderr bytes.Buffer
		if code := run(append(args, "-v"), &stdout, &stderr, sidecarEnv); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		if stdout.String() != quiet.String() {
			t.Error("-v changed the manifests")
		}
		logs += stderr.String()
	}
	for _, want := range []string{`msg="repository opened" repository=http://` + reg.Host + "/ocm",
		`msg="component version resolved" component=example.com/demo/podinfo version=1.0.0`,
		`msg="registry request" method=GET host=` + reg.Host, "status=200", `msg="cache hit"`, "msg=rendered", "ms="} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
	basic := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	for _, secret := range []string{pass, basic, "Authorization", "Bearer"} {
		if strings.Contains(logs, secret) {
			t.Errorf("the log holds %q:\n%s", secret, logs)
		}
	}

	// A failure with -v: the log, and still the error line last.
	var stdout, stderr bytes.Buffer
	if code := run([]string{"render", "--repository", "http://" + reg.Host + "/ocm", "--component", examples.Podinfo, "--version", "7.0.0", "-v"}, &stdout, &stderr, sidecarEnv); code == 0 || stdout.Len() != 0 {
		t.Fatalf("exit %d, stdout %q", code, stdout.String())
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if !strings.HasPrefix(lines[len(lines)-1], "argocd-ocm-plugin: ") || strings.Contains(stderr.String(), pass) {
		t.Errorf("stderr:\n%s", stderr.String())
	}

	// The sidecar's level comes from ARGOCD_OCM_LOG_LEVEL.
	stdout.Reset()
	stderr.Reset()
	if code := run(args, &stdout, &stderr, env(map[string]string{envLogLevel: "debug", "ARGOCD_OCM_PLAIN_HTTP": reg.Host})); code != 0 || !strings.Contains(stderr.String(), `msg="registry request"`) {
		t.Errorf("ARGOCD_OCM_LOG_LEVEL=debug: exit %d, stderr %q", code, stderr.String())
	}
}

// The progress line is for people at a terminal: with stderr a file or a
// pipe (Argo CD, scripts, CI), a slow download prints nothing.
func TestProgressOnlyOnTerminal(t *testing.T) {
	comps, err := examples.Demo("../../testdata/src")
	if err != nil {
		t.Fatal(err)
	}
	reg := registrytest.Start(t)
	reg.Push(t, "ocm", comps...)
	t.Setenv("ARGOCD_OCM_CACHE_DIR", t.TempDir())
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var stdout bytes.Buffer
	if code := run([]string{"render", "--repository", "http://" + reg.Host + "/ocm", "--component", examples.Podinfo, "--version", "1.0.0"}, &stdout, f, env(nil)); code != 0 {
		t.Fatal("render failed")
	}
	if b, _ := os.ReadFile(f.Name()); len(b) != 0 {
		t.Errorf("stderr is a file, yet: %q", b)
	}
	if isTerminal(f) || isTerminal(&stdout) {
		t.Error("a file or a buffer taken for a terminal")
	}

	// A registry cannot list its components: the message says so.
	var stderr bytes.Buffer
	stdout.Reset()
	if code := run([]string{"render", "--repository", "http://" + reg.Host + "/ocm", "--component", "example.com/demo/podinf", "--version", "1.0.0"}, &stdout, &stderr, env(nil)); code == 0 ||
		!strings.Contains(stderr.String(), "check the component name (a registry cannot list its components)") || strings.Count(stderr.String(), "\n") != 1 {
		t.Errorf("mistyped component in a registry: exit %d, stderr %q", code, stderr.String())
	}

	// The line itself: nothing for the first second, then a counter, cleared at the end.
	var out bytes.Buffer
	now := time.Unix(0, 0)
	p := &progress{w: &out, start: now, now: func() time.Time { return now }}
	p.add(4096)
	if out.Len() != 0 {
		t.Fatalf("progress within the first second: %q", out.String())
	}
	now = now.Add(1500 * time.Millisecond)
	p.add(3 << 20)
	p.done()
	if got := out.String(); got != "\rdownloading: 3.0 MiB\r\033[K" {
		t.Errorf("progress line %q", got)
	}
	var nilProgress *progress
	nilProgress.done()
}

// In the render server, ARGOCD_OCM_LOG_LEVEL's lines go to the server's own
// log (the sidecar's container log), tagged with the Application; what the
// client gets back stays its result.
func TestServerGenerationsLogToTheServerLog(t *testing.T) {
	var serverOut bytes.Buffer
	var stdout, stderr bytes.Buffer
	e := env(map[string]string{envLogLevel: "debug", "ARGOCD_APP_NAME": "shop", "ARGOCD_APP_NAMESPACE": "shop",
		"ARGOCD_ENV_REPOSITORY": inAppDir(t, demoRepo), "ARGOCD_ENV_COMPONENT": "example.com/demo/podinfo", "ARGOCD_ENV_VERSION": "1.0.0"})
	p, err := newServerProcess(e, &serverOut)
	if err != nil {
		t.Fatal(err)
	}
	if code := execute(t.Context(), p, []string{"generate"}, &stdout, &stderr, e, "", nil); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if stderr.Len() != 0 {
		t.Errorf("client stderr: %q", stderr.String())
	}
	if !strings.Contains(serverOut.String(), `msg="component version resolved" application=shop`) {
		t.Errorf("server log:\n%s", serverOut.String())
	}
}

func TestRedactSpec(t *testing.T) {
	for in, want := range map[string]string{
		"http://robot:s3cret@127.0.0.1:5000/ocm": "http://127.0.0.1:5000/ocm",
		"ghcr.io/acme/ocm":                       "ghcr.io/acme/ocm",
		"testdata/demo/ctf":                      "testdata/demo/ctf",
	} {
		if got := redactSpec(in); got != want {
			t.Errorf("redactSpec(%q) = %q, want %q", in, got, want)
		}
	}
}
