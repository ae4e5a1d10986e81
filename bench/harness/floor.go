package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"time"

	"helm.sh/helm/v4/pkg/chart/common"
	commonutil "helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/cli/values"
	"helm.sh/helm/v4/pkg/engine"
)

// The templates-only floor of a chart (issue 40): Helm 4's own engine
// (helm.sh/helm/v4/pkg/engine, Engine.RenderWithContext) executing the
// templates of the chart, loaded once in this process, with the case's
// values prepared as helm template prepares them (-f files and --set
// merged, dependencies processed, the values to render with the case's
// release, namespace, Kubernetes version and API versions). That is the
// work no renderer of the chart can skip: a render server that keeps
// everything else warm would approach it. Each run is timed alone: the
// values are prepared again before it (templates may change them), then a
// collection, untimed; its CPU time is this process's (nothing else of the
// harness runs meanwhile). It runs in the same alternated rounds as the
// commands of its case, and its median is the floor of the case's sidecar
// and process rows.

// floorCase is a realworld case's chart and values, ready for the engine.
type floorCase struct {
	chart   *chart.Chart
	values  map[string]any
	release common.ReleaseOptions
	caps    *common.Capabilities
}

// newFloorCase loads c's chart and merges its values as helm template does.
func newFloorCase(c *rwCase) *floorCase {
	opts := values.Options{}
	ns, kube := "default", ""
	var apis []string
	for i := 0; i < len(c.HelmArgs); i++ {
		switch c.HelmArgs[i] {
		case "-f":
			i++
			opts.ValueFiles = append(opts.ValueFiles, c.HelmArgs[i])
		case "--set":
			i++
			opts.Values = append(opts.Values, c.HelmArgs[i])
		case "--namespace":
			i++
			ns = c.HelmArgs[i]
		case "--kube-version":
			i++
			kube = c.HelmArgs[i]
		case "--api-versions":
			i++
			apis = append(apis, c.HelmArgs[i])
		case "--include-crds":
		default:
			fatalf("floor of %s: helm flag %q not understood", c.Label, c.HelmArgs[i])
		}
	}
	vals, err := opts.MergeValues(nil)
	if err != nil {
		fatalf("floor of %s: values: %v", c.Label, err)
	}
	data, err := os.ReadFile(c.Tgz)
	if err != nil {
		fatalf("floor of %s: %v", c.Label, err)
	}
	ch, err := loader.LoadArchive(bytes.NewReader(data))
	if err != nil {
		fatalf("floor of %s: %v", c.Label, err)
	}
	if err := chartutil.ProcessDependencies(ch, vals); err != nil {
		fatalf("floor of %s: %v", c.Label, err)
	}
	caps := common.DefaultCapabilities.Copy()
	if kube != "" {
		kv, err := common.ParseKubeVersion(kube)
		if err != nil {
			fatalf("floor of %s: %v", c.Label, err)
		}
		caps.KubeVersion = *kv
	}
	caps.APIVersions = append(caps.APIVersions, common.VersionSet(apis)...)
	return &floorCase{chart: ch, values: vals, caps: caps,
		release: common.ReleaseOptions{Name: c.Release, Namespace: ns, Revision: 1, IsInstall: true}}
}

// render prepares the values to render with (untimed) and times the
// engine's render of them.
func (f *floorCase) render(ctx context.Context) (sample, map[string]string) {
	vals, err := commonutil.ToRenderValuesWithSchemaValidation(f.chart, deepCopyValues(f.values), f.release, f.caps, false)
	if err != nil {
		fatalf("floor: values: %v", err)
	}
	runtime.GC()
	cpu0, t0 := processCPU(), time.Now()
	var e engine.Engine
	files, err := e.RenderWithContext(ctx, f.chart, vals)
	wall, cpu := time.Since(t0), processCPU()-cpu0
	if err != nil {
		fatalf("floor: render: %v", err)
	}
	return sample{Wall: wall, CPU: cpu}, files
}

// floorJob is the floor of c as a job of its case's rounds.
func floorJob(c *rwCase) *job {
	f := newFloorCase(c)
	j := &job{spec: cmdSpec{Name: "Helm engine, templates only (floor)"}}
	j.s = &series{Name: j.spec.Name}
	j.fn = func(ctx context.Context) sample {
		s, files := f.render(ctx)
		if len(files) == 0 {
			fatalf("floor of %s: the engine rendered no files", c.Label)
		}
		return s
	}
	return j
}

// processCPU is this process's CPU time (user + system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// deepCopyValues copies the maps and lists of merged values (what a
// template may change), as each render of helm template starts from its
// own.
func deepCopyValues(v map[string]any) map[string]any {
	out := make(map[string]any, len(v))
	for k, e := range v {
		out[k] = deepCopyValue(e)
	}
	return out
}

func deepCopyValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return deepCopyValues(v)
	case []any:
		l := make([]any, len(v))
		for i, e := range v {
			l[i] = deepCopyValue(e)
		}
		return l
	}
	return v
}

// floorNote describes a row's ratio to the floor.
func floorNote(what string, s, floor *series) string {
	return fmt.Sprintf("%s / floor: wall %.2f (%.1f / %.1f ms), CPU %.2f (%.1f / %.1f ms)", what,
		s.wall()/floor.wall(), s.wall(), floor.wall(), s.cpu()/floor.cpu(), s.cpu(), floor.cpu())
}
