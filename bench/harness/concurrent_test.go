package main

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{1.75, 1.23, 1.41}, 1.41},
		{[]float64{1.31, 1.75, 1.23, 1.41}, 1.36},
		{[]float64{2, 1}, 1.5},
	} {
		in := slices.Clone(tc.in)
		if got := median(in); round(got) != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
		if !slices.Equal(in, tc.in) {
			t.Errorf("median reordered its input: %v, was %v", in, tc.in)
		}
	}
}

// warmSeries is warm single generations of the given wall times (ms), each
// with 1 ms more CPU time than wall time.
func warmSeries(walls ...float64) *series {
	s := &series{}
	for _, w := range walls {
		s.add(sample{Wall: time.Duration(w * float64(time.Millisecond)), CPU: time.Duration((w + 1) * float64(time.Millisecond))})
	}
	return s
}

func TestNewBurstRun(t *testing.T) {
	ok := func(app string) []byte { return []byte(`{"metadata":{"name":"` + app + `-podinfo"}}`) }
	samples := []sample{
		{Exit: 0, Stdout: ok("app-0"), CPU: 10 * time.Millisecond, MaxRSSKB: 30 << 10},
		{Exit: 1, Stderr: " app-1 failed \n", CPU: 20 * time.Millisecond, MaxRSSKB: 40 << 10},
		{Exit: 0, Stdout: append(ok("app-2"), ok("app-3")...), CPU: 30 * time.Millisecond, MaxRSSKB: 20 << 10}, // another app's output
		{Exit: 0, Stdout: []byte(`{}`), CPU: 40 * time.Millisecond, MaxRSSKB: 10 << 10},                        // none
		{Exit: 0, Stdout: ok("app-4"), CPU: 50 * time.Millisecond, MaxRSSKB: 10 << 10},
	}
	reqs := []registrytest.Request{
		{Method: "GET", Path: "/v2/ocm/component-descriptors/x/blobs/sha256:aa", Status: 200},
		{Method: "GET", Path: "/v2/ocm/component-descriptors/x/blobs/sha256:aa", Status: 200},
		{Method: "GET", Path: "/v2/ocm/component-descriptors/x/blobs/sha256:bb", Status: 200},
		{Method: "GET", Path: "/v2/ocm/component-descriptors/x/manifests/1.0.0", Status: 200},
		{Method: "HEAD", Path: "/v2/ocm/component-descriptors/x/manifests/1.0.0", Status: 200},
		{Method: "GET", Path: "/v2/ocm/component-descriptors/x/manifests/sha256:cc", Status: 200},
	}
	r := newBurstRun(150*time.Millisecond, samples, reqs, warmSeries(30, 10, 20))
	if r.WallMS != 150 || r.WarmBeforeMS != 20 || r.WarmBeforeCPUMS != 21 {
		t.Errorf("wall %v, warm before %v (CPU %v); want 150, 20 (21)", r.WallMS, r.WarmBeforeMS, r.WarmBeforeCPUMS)
	}
	if r.Errors != 3 || !strings.HasPrefix(r.FirstError, "app-1: exit 1, 0 mentions of app-N-podinfo: app-1 failed") {
		t.Errorf("errors %d (%q), want 3, the first app-1's", r.Errors, r.FirstError)
	}
	if want := map[string]int{"sha256:aa": 2, "sha256:bb": 1}; !maps.Equal(r.BlobGETs, want) || r.maxPerBlob() != 2 {
		t.Errorf("blob GETs %v (most %d), want %v (most 2)", r.BlobGETs, r.maxPerBlob(), want)
	}
	if r.TagGETs != 2 || r.OtherRequests != 1 {
		t.Errorf("tag GETs %d, other requests %d; want 2, 1", r.TagGETs, r.OtherRequests)
	}
	if r.CPUSumMS != 150 || r.RSSSumMiB != 110 || r.RSSMaxMiB != 40 {
		t.Errorf("CPU %v ms, RSS sum %v MiB, max %v MiB; want 150, 110, 40", r.CPUSumMS, r.RSSSumMiB, r.RSSMaxMiB)
	}
}

func TestSummarizeBursts(t *testing.T) {
	runs := []burstRun{
		{WallMS: 1750, CPUSumMS: 500, ServerPeakMiB: 60, LoadAvg: 3, BlobGETs: map[string]int{"a": 1, "b": 1}, TagGETs: 1},
		{WallMS: 1230, CPUSumMS: 400, ServerPeakMiB: 58, LoadAvg: 5, BlobGETs: map[string]int{"a": 1, "b": 1}, TagGETs: 2},
		{WallMS: 1410, CPUSumMS: 450, ServerPeakMiB: 70, LoadAvg: 4, BlobGETs: map[string]int{"a": 1, "b": 3}, TagGETs: 1,
			Errors: 2, FirstError: "app-7: exit 1"},
		{WallMS: 1310, CPUSumMS: 420, ServerPeakMiB: 59, LoadAvg: 9, BlobGETs: map[string]int{"a": 1, "b": 1}, TagGETs: 1,
			Errors: 1, FirstError: "app-3: exit 2"},
		// A burst hit by other load: the median does not move with it.
		{WallMS: 4900, CPUSumMS: 900, ServerPeakMiB: 61, LoadAvg: 2, BlobGETs: map[string]int{"a": 1, "b": 1}, TagGETs: 1},
	}
	s := summarizeBursts(runs, 1000)
	if s.N != 5 || s.RatioMedian != 1.41 || s.RatioMin != 1.23 || s.RatioMax != 4.9 {
		t.Errorf("ratio median %v (min %v, max %v) of %d, want 1.41 (1.23, 4.9) of 5", s.RatioMedian, s.RatioMin, s.RatioMax, s.N)
	}
	if runs[0].Ratio != 1.75 || runs[4].Ratio != 4.9 {
		t.Errorf("runs' ratios %v, %v; want 1.75, 4.9 (set on each run)", runs[0].Ratio, runs[4].Ratio)
	}
	if s.WallMedian != 1410 || s.WallMin != 1230 || s.WallMax != 4900 || s.CPUSumMedian != 450 {
		t.Errorf("wall median %v (min %v, max %v), CPU %v; want 1410 (1230, 4900), 450", s.WallMedian, s.WallMin, s.WallMax, s.CPUSumMedian)
	}
	if !slices.Equal(s.Ratios, []float64{1.75, 1.23, 1.41, 1.31, 4.9}) || !slices.Equal(s.Walls, []float64{1750, 1230, 1410, 1310, 4900}) {
		t.Errorf("per-burst ratios %v, walls %v: want every burst's, in order", s.Ratios, s.Walls)
	}
	// The checks are on the worst burst, the failures on all of them.
	if s.Errors != 3 || s.FirstError != "app-7: exit 1" || s.MaxPerBlob != 3 || s.BlobGETs["b"] != 3 || s.TagGETs != 2 {
		t.Errorf("errors %d (%q), most GETs of a blob %d (b: %d), tag GETs %d; want 3 (app-7's), 3 (3), 2", s.Errors, s.FirstError, s.MaxPerBlob, s.BlobGETs["b"], s.TagGETs)
	}
	if s.ServerPeakMax != 70 || s.ServerPeakMedian != 60 || s.LoadMin != 2 || s.LoadMax != 9 {
		t.Errorf("server peak %v (median %v), load %v–%v; want 70 (60), 2–9", s.ServerPeakMax, s.ServerPeakMedian, s.LoadMin, s.LoadMax)
	}
	note := s.note()
	for _, want := range []string{"median of 5 bursts", "ratios 1.75, 1.23, 1.41, 1.31, 4.90 (min 1.23, max 4.90)", "wall 1.75, 1.23, 1.41, 1.31, 4.90 s"} {
		if !strings.Contains(note, want) {
			t.Errorf("note %q does not say %q", note, want)
		}
	}

	// Two bursts (-quick): the median is their mean; one: "1 burst".
	if s := summarizeBursts(runs[:2], 1000); round(s.RatioMedian) != 1.49 || !strings.Contains(s.note(), "median of 2 bursts") {
		t.Errorf("2 bursts: ratio median %v, note %q; want 1.49, median of 2 bursts", s.RatioMedian, s.note())
	}
	if s := summarizeBursts(runs[:1], 500); s.RatioMedian != 3.5 || !strings.Contains(s.note(), "median of 1 burst,") {
		t.Errorf("1 burst against 500 ms: ratio median %v, note %q; want 3.5, median of 1 burst", s.RatioMedian, s.note())
	}
}
