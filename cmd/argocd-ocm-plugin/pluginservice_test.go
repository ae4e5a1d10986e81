package main

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/grpc/status"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/cmpservice"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/server"
)

// startPluginService serves the plugin service in-process on a fresh
// socket, rendering with requestHandler, and returns a client of it.
func startPluginService(t *testing.T) *cmpservice.Client {
	t.Helper()
	dir, err := os.MkdirTemp("", "cmp") // short: sun_path is ~108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	socket := filepath.Join(dir, "argocd-ocm-plugin.sock")
	l, err := server.Listen(socket)
	if err != nil {
		t.Fatal(err)
	}
	svc := &cmpservice.Service{Runner: &server.Server{Handler: requestHandler(newProcess())}, WorkDir: filepath.Join(dir, "streams")}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Serve(ctx, l) }()
	c, err := cmpservice.Dial(socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return c
}

// What the repo-server gets from the plugin service equals what a generate
// or parameters process prints in the Application's directory: the same
// manifests, the same announcement, and its one error line as the gRPC
// error; the stream's directory is named nowhere.
func TestPluginServiceMatchesProcess(t *testing.T) {
	c := startPluginService(t)
	dir := appDir(t)
	base := map[string]string{"ARGOCD_APP_NAME": "shop", "ARGOCD_APP_NAMESPACE": "shop-ns", "ARGOCD_ENV_REPOSITORY": "ctf",
		"ARGOCD_ENV_COMPONENT": "example.com/demo/podinfo", "ARGOCD_ENV_VERSION": "1.0.0"}
	with := func(kv ...string) map[string]string { return overlay(base, kv...) }
	for _, tc := range []struct {
		name    string
		command string
		env     map[string]string
		ok      bool
	}{
		{"generate", "generate", base, true},
		{"value file", "generate", with("ARGOCD_ENV_VALUE_FILES", "values/prod.yaml"), true},
		{"parameters", "parameters", base, true},
		{"missing value file", "generate", with("ARGOCD_ENV_VALUE_FILES", "values/none.yaml"), false},
		{"escaping value file", "generate", with("ARGOCD_ENV_VALUE_FILES", "../values/prod.yaml"), false},
		{"unknown version", "generate", with("ARGOCD_ENV_VERSION", "9.9.9"), false},
		{"kustomization", "generate", with("ARGOCD_ENV_COMPONENT", "example.com/demo/podinfo-extras"), true},
		{"sidecar setting from the Application", "generate", with("ARGOCD_OCM_CACHE_DIR", "/etc"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			t.Chdir(dir)
			procEnv := map[string]string{}
			var streamEnv []string
			for k, v := range tc.env {
				streamEnv = append(streamEnv, k+"="+v)
				if server.RequestScoped(k) {
					procEnv[k] = v // the rest is the sidecar's, never the stream's
				}
			}
			code := run([]string{tc.command}, &stdout, &stderr, env(procEnv))
			t.Chdir(t.TempDir())
			if (code == 0) != tc.ok {
				t.Fatalf("process: exit %d: %s", code, stderr.String())
			}
			var got string
			var err error
			if tc.command == "parameters" {
				var b []byte
				b, err = c.ParametersJSON(context.Background(), dir, streamEnv)
				got = string(b)
			} else {
				var ms []string
				ms, err = c.Generate(context.Background(), dir, streamEnv)
				got = "---\n" + strings.Join(ms, "\n---\n") + "\n"
			}
			switch {
			case !tc.ok:
				if err == nil {
					t.Fatalf("no error, manifests %q", got)
				}
				if msg := status.Convert(err).Message(); msg != strings.TrimSpace(stderr.String()) {
					t.Fatalf("error %q, process printed %q", msg, stderr.String())
				}
			case err != nil:
				t.Fatal(err)
			case tc.command == "parameters":
				var a, b any
				if err := json.Unmarshal([]byte(got), &a); err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(stdout.Bytes(), &b); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(a, b) {
					t.Fatalf("announcement differs:\nservice %s\nprocess %s", got, stdout.String())
				}
			default:
				// One string per document, each as generate printed it.
				if got != stdout.String() {
					t.Fatalf("manifests differ: service %d bytes, process %d bytes", len(got), stdout.Len())
				}
			}
		})
	}
}

// overlay is base with the pairs of kv (name, value, ...) set.
func overlay(base map[string]string, kv ...string) map[string]string {
	m := maps.Clone(base)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}
