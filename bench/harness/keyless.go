package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/policy"
)

// keyless measures what verifying a keyless (Sigstore/v1alpha1) signature
// adds to a warm generate: in this process, one engine (its trusted root
// parsed once and kept while the file is unchanged, as the render server
// keeps it), a renderer per generation, the committed keyless component of
// testdata/sigstore rendered with and without the required signature,
// alternately, and the difference of the medians.
func (b *bench) keyless(ctx context.Context) {
	b.section("keyless")
	fx := filepath.Join(b.root, "testdata", "sigstore")
	engine := argocdocm.NewEngine(argocdocm.WithBlobCacheDir(b.dir("cache-keyless")), argocdocm.WithoutDockerConfig())
	lg := slog.New(slog.NewTextHandler(io.Discard, nil))
	req := argocdocm.Request{Repository: filepath.Join(fx, "ctf"), Component: "example.com/keyless/hello", Version: "1.0.0", Namespace: "bench"}
	keyless := argocdocm.Signatures{Trust: []policy.Signature{{Name: "release", TrustedRoot: filepath.Join(fx, "trusted_root.json"),
		CertificateIdentity:   "https://github.com/example-org/platform/.github/workflows/release.yml@refs/heads/main",
		CertificateOIDCIssuer: "https://token.actions.githubusercontent.com"}}}
	// Wall and CPU time (this process's user+system) of one generation:
	// CPU is what the verification costs, wall what it costs on a loaded
	// machine.
	gen := func(sig argocdocm.Signatures) (float64, float64) {
		start, cpu0 := time.Now(), cpuMS()
		r, err := engine.Renderer(argocdocm.Generation{Person: &argocdocm.Person{Signatures: sig}, Logger: lg, Notes: io.Discard})
		if err != nil {
			fatalf("keyless: %v", err)
		}
		res, err := r.Render(ctx, req)
		if err != nil {
			fatalf("keyless: %v", err)
		}
		if sig.Trust != nil && len(res.Signatures) != 1 {
			fatalf("keyless: the signature was not verified: %v", res.Signatures)
		}
		return float64(time.Since(start).Microseconds()) / 1000, cpuMS() - cpu0
	}
	for range 5 { // warm: the cache, the parsed trusted root
		gen(argocdocm.Signatures{})
		gen(keyless)
	}
	runs := 30 * b.cfg.Runs
	var plain, signed, plainCPU, signedCPU []float64
	for range runs {
		w, c := gen(argocdocm.Signatures{})
		plain, plainCPU = append(plain, w), append(plainCPU, c)
		w, c = gen(keyless)
		signed, signedCPU = append(signed, w), append(signedCPU, c)
	}
	p, s, pc, sc := median(plain), median(signed), mean(plainCPU), mean(signedCPU)
	added, addedCPU := s-p, sc-pc
	logf("keyless: warm generate %.2f ms without, %.2f ms with the keyless signature required (CPU %.2f / %.2f ms; %d runs each)", p, s, pc, sc, runs)
	b.addGoal(goal{ID: "39", What: "keyless (Sigstore/v1alpha1) verification added to a warm generate, in process (wall, median)", Value: round(added), Unit: "ms",
		Reference: round(p), RefWhat: "ms warm generate without a signature", Limit: 5, LimitWhat: "≤ 5 ms",
		Met: boolp(added <= 5), Note: fmt.Sprintf("median of %d alternating generations each: %.2f ms with, %.2f ms without; CPU time added %.2f ms (mean)", runs, s, p, addedCPU)})
	b.res.Sections["keyless"] = map[string]any{"runs": runs, "without_ms": round(p), "with_ms": round(s), "added_ms": round(added),
		"without_cpu_ms": round(pc), "with_cpu_ms": round(sc), "added_cpu_ms": round(addedCPU)}
}

// cpuMS is this process's CPU time (user and system) so far, in ms.
func cpuMS() float64 { return float64(processCPU()) / 1e6 }

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var t float64
	for _, x := range xs {
		t += x
	}
	return t / float64(len(xs))
}
