package main

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/examples"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
)

const cliHelperEnv = "ARGOCD_OCM_CLI_TEST_ARGS"

// TestCLIHelperProcess runs the command line in a re-executed test binary,
// with the real stdout and stderr, so that everything the process writes
// (log lines included) is seen by the parent.
func TestCLIHelperProcess(t *testing.T) {
	args := os.Getenv(cliHelperEnv)
	if args == "" {
		t.Skip("helper process of the CLI fault tests")
	}
	os.Exit(runProcess(strings.Split(args, "\x1f"), os.Stdout, os.Stderr, os.Getenv))
}

// A registry that fails (503, retried, then given up) while the chart is downloaded: non-zero exit,
// nothing on stdout, one line on stderr naming the application, component,
// resource, registry, repository and HTTP status. Checked in a separate
// process so that any stray log line would show.
func TestCLIRegistryFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	comps, err := examples.Demo("../../testdata/src")
	if err != nil {
		t.Fatal(err)
	}
	chart := blob.Digest(comps[0].Resources[0].Data)
	reg := registrytest.Start(t, registrytest.WithMiddleware(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/blobs/"+chart) {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			next.ServeHTTP(w, r)
		})
	}))
	reg.Push(t, "ocm", comps...)
	for _, tc := range []struct {
		name string
		args []string
		env  []string
	}{
		{"render", []string{"render", "--repository", "http://" + reg.Host + "/ocm", "--component", examples.Podinfo, "--version", "1.0.0"}, nil},
		{"generate", []string{"generate"}, []string{"ARGOCD_APP_NAME=shop", "ARGOCD_APP_NAMESPACE=shop",
			"ARGOCD_ENV_REPOSITORY=http://" + reg.Host + "/ocm", "ARGOCD_ENV_COMPONENT=" + examples.Podinfo, "ARGOCD_ENV_VERSION=1.0.0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestCLIHelperProcess$", "-test.count=1")
			cmd.Env = append(append(os.Environ(), cliHelperEnv+"="+strings.Join(tc.args, "\x1f"),
				"ARGOCD_OCM_CACHE_DIR="+t.TempDir(), "DOCKER_CONFIG="+t.TempDir(), "ARGOCD_OCM_ALLOW_ADDRESSES=127.0.0.1"), tc.env...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() == 0 {
				t.Fatalf("want a non-zero exit, got %v", err)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout not empty: %q", stdout.String())
			}
			msg := stderr.String()
			if strings.Count(msg, "\n") != 1 || !strings.HasPrefix(msg, "argocd-ocm-plugin: ") {
				t.Errorf("stderr is not one line: %q", msg)
			}
			for _, m := range []string{examples.Podinfo + ":1.0.0", "resource chart", "registry " + reg.Host,
				"repository ocm/component-descriptors/" + examples.Podinfo, "HTTP 503"} {
				if !strings.Contains(msg, m) {
					t.Errorf("stderr %q lacks %q", msg, m)
				}
			}
			if tc.name == "generate" && !strings.Contains(msg, "application shop") {
				t.Errorf("stderr %q does not name the application", msg)
			}
		})
	}
}
