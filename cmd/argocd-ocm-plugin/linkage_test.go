package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The plugin renders with Helm's engine and chart packages, not its install
// action: pkg/action links kubectl, client-go's typed clients and more, about
// 6 ms of start-up and 6 MiB of every generate process (internal/render/helm
// install.go runs Install's client-only steps itself).
func TestBinaryDoesNotLinkHelmActionOrKubectl(t *testing.T) {
	if testing.Short() {
		t.Skip("go list: -short")
	}
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == "helm.sh/helm/v4/pkg/action" || strings.HasPrefix(pkg, "k8s.io/kubectl/") {
			t.Errorf("the binary links %s", pkg)
		}
	}
}

// internal/util/startheap must raise GOGC before the heavy package inits (Helm's
// jsonschema/v6 metaschemas, client-go's scheme: 4.6 MiB in all): a process
// that collects during its start-up pays 6 ms of CPU for nothing. The test
// binary links the same packages as the command; it is run again with
// GODEBUG=inittrace=1,gctrace=1 and no tests, and must not collect at all
// while it initialises.
func TestStartHeapRaisedBeforeHeavyInitsAndNoCollectionDuringInit(t *testing.T) {
	if os.Getenv("STARTHEAP_CHILD") == "1" {
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestStartHeapRaisedBeforeHeavyInitsAndNoCollectionDuringInit$")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOGC=") && !strings.HasPrefix(kv, "GODEBUG=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "STARTHEAP_CHILD=1", "GODEBUG=inittrace=1,gctrace=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("child: %v\n%s", err, stderr.String())
	}
	pos := map[string]int{}
	firstGC, lastInit := -1, -1
	for i, line := range strings.Split(stderr.String(), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 1 && f[0] == "init":
			pos[f[1]] = i
			lastInit = i
		case len(f) > 1 && f[0] == "gc" && firstGC < 0:
			firstGC = i
		}
	}
	sh, ok := pos["github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/startheap"]
	if !ok {
		t.Fatalf("no init line of internal/util/startheap:\n%s", stderr.String())
	}
	for _, heavy := range []string{"github.com/santhosh-tekuri/jsonschema/v6", "k8s.io/client-go/kubernetes/scheme"} {
		p, ok := pos[heavy]
		if !ok {
			t.Errorf("no init line of %s (still linked? then update this test)", heavy)
		} else if p < sh {
			t.Errorf("%s initialised before internal/util/startheap", heavy)
		}
	}
	if firstGC >= 0 && firstGC < lastInit {
		t.Errorf("the process collected during its initialisation:\n%s", stderr.String())
	}
}
