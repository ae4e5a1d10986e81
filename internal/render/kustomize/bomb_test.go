package kustomize

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/archive"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
)

// doubling returns kustomizations l0..l<depth> where l<i> includes l<i-1>
// twice (through two overlays with different name prefixes): kustomize
// builds l0 2^depth times. A few hundred bytes; at depth 12 the build takes
// about a minute, at 16 hours.
func doubling(depth int) map[string]string {
	m := map[string]string{"l0/cm.yaml": cm, "l0/" + kfile: "resources: [cm.yaml]\n"}
	for i := 1; i <= depth; i++ {
		for _, side := range []string{"a", "b"} {
			m[fmt.Sprintf("l%d%s/%s", i, side, kfile)] = fmt.Sprintf("namePrefix: %s%d-\nresources: [../l%d]\n", side, i, i-1)
		}
		m[fmt.Sprintf("l%d/%s", i, kfile)] = fmt.Sprintf("resources: [../l%da, ../l%db]\n", i, i)
	}
	return m
}

// overlays includes base/big.yaml (holding big) through n overlays.
func overlays(big string, n int) map[string]string {
	m := map[string]string{"base/big.yaml": big, "base/" + kfile: "resources: [big.yaml]\n"}
	var names []string
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("o%d", i)
		names = append(names, name)
		m[name+"/"+kfile] = "namePrefix: " + name + "-\nresources: [../base]\n"
	}
	m[kfile] = "resources: [" + strings.Join(names, ", ") + "]\n"
	return m
}

func TestExpansionBombs(t *testing.T) {
	big := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata: {a: \"" + strings.Repeat(":", manifests.MaxDocumentNodes-100) + "\"}\n"
	for _, tc := range []struct {
		name    string
		files   map[string]string
		entry   string
		want    error // nil: renders
		objects int
		msg     []string
	}{
		{"doubling, depth 4 (31 builds)", doubling(4), "l4", nil, 16, nil},
		{"doubling, depth 30", doubling(30), "l30", errdef.ErrLimitExceeded, 0, []string{`"l30" expands to`, "kustomization builds", "limit of 1000"}},
		{"doubling, depth 70 (beyond int64)", doubling(70), "l70", errdef.ErrLimitExceeded, 0, []string{"more than 2^63"}},
		{"a big resource included through five overlays", overlays(big, 5), "", errdef.ErrLimitExceeded, 0, []string{"structural characters", "counting bases once per path"}},
		{"the same resource through three overlays", overlays(big, 3), "", nil, 3, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tree, err := archive.ReadTree(bytes.NewReader(tarOf(t, files(tc.files)...)))
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			objs, err := Render(context.Background(), tree, tc.entry)
			if el := time.Since(start); el > 20*time.Second {
				t.Errorf("took %v", el)
			}
			if tc.want == nil {
				if err != nil || len(objs) != tc.objects {
					t.Fatalf("got %d objects, %v; want %d", len(objs), err, tc.objects)
				}
				return
			}
			if !errors.Is(err, tc.want) || !errors.Is(err, errdef.ErrRender) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			for _, m := range tc.msg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("message %q does not mention %q", err, m)
				}
			}
		})
	}
}
