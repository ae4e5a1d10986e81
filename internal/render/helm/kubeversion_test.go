package helm

import (
	"os"
	"runtime/debug"
	"strings"
	"testing"
)

func TestKubeVersionFromModules(t *testing.T) {
	for _, tc := range []struct {
		name string
		deps []*debug.Module
		want string
	}{
		{"client-go", []*debug.Module{{Path: "k8s.io/apimachinery", Version: "v0.36.1"}, {Path: "k8s.io/client-go", Version: "v0.37.2"}}, "v1.37.0"},
		{"apimachinery only", []*debug.Module{{Path: "k8s.io/apimachinery", Version: "v0.34.0"}}, "v1.34.0"},
		{"replaced", []*debug.Module{{Path: "k8s.io/client-go", Version: "v0.30.0", Replace: &debug.Module{Path: "k8s.io/client-go", Version: "v0.33.1"}}}, "v1.33.0"},
		{"pseudo-version", []*debug.Module{{Path: "k8s.io/client-go", Version: "v0.0.0-20260101000000-abcdef123456"}}, "v1.20.0"},
		{"old major scheme", []*debug.Module{{Path: "k8s.io/client-go", Version: "v11.0.0+incompatible"}}, "v1.20.0"},
		{"none", nil, "v1.20.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := kubeVersionFromModules(tc.deps); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestLinkedClientGoIsGoMods(t *testing.T) {
	b, err := os.ReadFile("../../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	var want string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "k8s.io/client-go" {
			want = f[1]
		}
	}
	if want == "" {
		t.Fatal("go.mod does not require k8s.io/client-go")
	}
	if linkedClientGo != want {
		t.Errorf("linkedClientGo = %s, go.mod has k8s.io/client-go %s: update the constant", linkedClientGo, want)
	}
	if got := DefaultKubeVersion(); got != "v1."+strings.Split(want, ".")[1]+".0" {
		t.Errorf("DefaultKubeVersion() = %s for k8s.io/client-go %s", got, want)
	}
}
