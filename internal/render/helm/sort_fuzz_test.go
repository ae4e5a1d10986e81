package helm

import (
	"fmt"
	"io"
	"log"
	"reflect"
	"strings"
	"testing"

	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
)

// sortSeeds are documents and separators for the sort's fuzz targets.
func sortSeeds() []string {
	seeds := append(append([]string{}, wellFormedDocs...), unusualDocs...)
	seeds = append(seeds,
		"---", "---\n---\n", " \n---\n \n", "a\n--- b\n---c\n----\n", "\v---\v", "\f\n---\f", "x\r\n---\r\n", "-- -\n---\n", "\n \n---",
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  annotations:\n    helm.sh/hook: pre-install\n",
		strings.Repeat("---\n", 50), strings.Repeat("apiVersion: v1\nkind: K\n---\n", 20),
		// Helm 4: a separator is "---" and the blanks after it; trailing
		// white space stays in the document; webhook kinds are known kinds.
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: |+\n    x\n\n\n--- # c\napiVersion: v1\nkind: B\n \t\n---\t\n",
		"---apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata:\n  name: m\n---\napiVersion: x/v1\nkind: Widget\n",
		"a\u00a0\n---\u0085\nb\n---",
	)
	return seeds
}

// FuzzSplitDocs: splitDocs gives releaseutil.SplitManifests' documents, in
// order, for any text.
func FuzzSplitDocs(f *testing.F) {
	for _, s := range sortSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, file string) {
		got := splitDocs(file)
		m := releaseutil.SplitManifests(file)
		want := make([]string, len(m))
		for i := range want {
			d, ok := m[fmt.Sprintf("manifest-%d", i)]
			if !ok {
				t.Fatalf("SplitManifests: no manifest-%d in %q", i, m)
			}
			want[i] = d
		}
		if len(got) != 0 || len(want) != 0 {
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%q:\nsplitDocs %q\nHelm's    %q", file, got, want)
			}
		}
	})
}

// FuzzSortedRelease: for any two rendered files, sortedRelease gives up or
// gives SortManifests' documents, heads and hooks, and the objects of
// Helm's release manifest and hooks (checkSortedRelease); it never panics.
func FuzzSortedRelease(f *testing.F) {
	defer log.SetOutput(log.Writer())
	log.SetOutput(io.Discard) // Helm's "skipping unknown hook"
	seeds := sortSeeds()
	for i, s := range seeds {
		f.Add(s, seeds[(i*7+3)%len(seeds)])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if len(a)+len(b) > 1<<16 {
			return
		}
		checkSortedRelease(t, map[string]string{"c/templates/a.yaml": a, "c/templates/b.yaml": b})
	})
}
