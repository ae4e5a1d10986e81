package registry_test

import (
	"crypto/rand"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/registry"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
)

// wan makes a registry look far away: rtt before every response and a
// bandwidth cap on bodies.
func wan(rtt time.Duration, bytesPerSecond int) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(rtt)
			next.ServeHTTP(&throttled{ResponseWriter: w, bps: bytesPerSecond}, r)
		})
	}
}

type throttled struct {
	http.ResponseWriter
	bps int
}

func (t *throttled) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		c := min(len(p), 64<<10)
		m, err := t.ResponseWriter.Write(p[:c])
		n += m
		if err != nil {
			return n, err
		}
		time.Sleep(time.Duration(c) * time.Second / time.Duration(t.bps))
		p = p[c:]
	}
	return n, nil
}

// TestMirrorFigures measures what docs/scaling.md reports: upstream blob
// GETs and bytes for a fleet of sidecars with and without a mirror, and the
// time of one cold generation direct, through a cold mirror and through a
// warm one, against an upstream 25 ms and 50 MB/s away. It asserts only the
// request counts; the times are figures, not goals.
//
//	ARGOCD_OCM_MIRROR_FIGURES=1 go test -count=1 -run TestMirrorFigures -v ./internal/source/registry/
func TestMirrorFigures(t *testing.T) {
	if os.Getenv("ARGOCD_OCM_MIRROR_FIGURES") == "" {
		t.Skip("set ARGOCD_OCM_MIRROR_FIGURES=1 to take the figures of docs/scaling.md")
	}
	big := make([]byte, 8<<20) // incompressible, as a packaged chart with CRDs is not
	rand.Read(big)
	comp, d := fleetComponent(t)
	comp.Resources = append(comp.Resources, ocmbuild.Resource{Name: "bulk", Type: "blob", Data: big, MediaType: "application/octet-stream"})
	const sidecars = 8
	bytesOf := func(r *registrytest.Registry, sizes map[string]int) int {
		n := 0
		for _, q := range r.Requests() {
			if q.IsBlob() && q.Status == http.StatusOK {
				n += sizes[q.Path[strings.LastIndex(q.Path, "/")+1:]]
			}
		}
		return n
	}
	a, err := comp.Artifact()
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string]int{}
	for dg, b := range a.Blobs {
		sizes[dg] = len(b)
	}
	for _, mode := range []string{"direct", "mirror, sequential", "mirror, concurrent"} {
		up := registrytest.Start(t, registrytest.WithMiddleware(wan(25*time.Millisecond, 50<<20)))
		up.Push(t, "ocm", comp)
		// A mirror on disk, as a real one is (the in-memory driver copies on append).
		mirror := registrytest.Start(t, registrytest.WithProxy(up.URL, "", ""), registrytest.WithStorageDir(t.TempDir()))
		up.Reset()
		var ro []registry.Option
		if mode != "direct" {
			ro = append(ro, registry.WithMirrors(up.Host, plainMirror(mirror)))
		}
		var times []time.Duration
		var mu sync.Mutex
		one := func() {
			r := sidecar(t, up, t.TempDir(), nil, ro...)
			start := time.Now()
			mustGenerate(t, r, d)
			mu.Lock()
			times = append(times, time.Since(start))
			mu.Unlock()
		}
		if mode == "mirror, concurrent" {
			var wg sync.WaitGroup
			for i := 0; i < sidecars; i++ {
				wg.Add(1)
				go func() { defer wg.Done(); one() }()
			}
			wg.Wait()
		} else {
			for i := 0; i < sidecars; i++ {
				one()
			}
		}
		total, per := blobGETs(up)
		t.Logf("%-19s %d sidecars: upstream %3d blob GETs (%d distinct), %5.1f MB, %3d requests in all; first cold generation %4d ms, next ones %4d ms (median)",
			mode+":", sidecars, total, len(per), float64(bytesOf(up, sizes))/(1<<20), up.Count(nil), times[0].Milliseconds(), median(times[1:]).Milliseconds())
		if mode == "mirror, sequential" && total != len(per) {
			t.Errorf("through the mirror the upstream served %d blob GETs for %d blobs", total, len(per))
		}
	}
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s[len(s)/2]
}
