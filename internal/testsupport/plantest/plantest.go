// Package plantest tests a planner at its own boundary (plan.Input → plan.Plan):
// a component version held in memory, a resource reader over it (what the
// renderer's verified access would read), and golden plans.
package plantest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/archive"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/plan"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// Component is a component version whose resources are held in memory:
// documents (definitions, config resources, RGDs), the default values of
// charts and the files of trees, by resource name.
type Component struct {
	D      *ocm.Descriptor
	Docs   map[string]string
	Values map[string]map[string]any
	Trees  map[string]map[string]string
}

// NewComponent is name:version with resources res (localBlob accesses, so
// that they read as the component's own).
func NewComponent(name, version string, res ...ocm.Resource) *Component {
	d := &ocm.Descriptor{Name: name, Version: version, Resources: res}
	for i := range d.Resources {
		r := &d.Resources[i]
		if r.Version == "" {
			r.Version = version
		}
		if r.Access.Type == "" {
			r.Access = ocm.Access{Type: "localBlob/v1", Fields: map[string]any{"localReference": "sha256:" + strings.Repeat("0", 64)}}
		}
	}
	return &Component{D: d, Docs: map[string]string{}, Values: map[string]map[string]any{}, Trees: map[string]map[string]string{}}
}

// Resource is a resource of type typ named name.
func Resource(name, typ string) ocm.Resource {
	return ocm.Resource{ElementMeta: ocm.ElementMeta{Name: name}, Type: typ}
}

func (c *Component) Descriptor() *ocm.Descriptor { return c.D }
func (c *Component) DescriptorDigest() string    { return "" }
func (c *Component) Repository() ocm.Repository  { return nil }
func (c *Component) OpenLocalBlob(context.Context, ocm.Access) (ocm.Blob, error) {
	return nil, errors.New("plantest: a planner reads through its Reader, not the blobs")
}

// Reader reads a Component's resources, as plan.Reader, and counts reads.
type Reader struct{ Reads int }

var _ plan.Reader = (*Reader)(nil)

func (r *Reader) ReadDocument(_ context.Context, cv ocm.ComponentVersion, res *ocm.Resource, max int64) ([]byte, error) {
	r.Reads++
	doc, ok := cv.(*Component).Docs[res.Name]
	if !ok {
		return nil, fmt.Errorf("%w: plantest: no document %s", errdef.ErrNotFound, res.Name)
	}
	if max > 0 && int64(len(doc)) > max {
		return nil, fmt.Errorf("%w: plantest: %s is %d bytes", errdef.ErrLimitExceeded, res.Name, len(doc))
	}
	return []byte(doc), nil
}

func (r *Reader) ChartValues(_ context.Context, cv ocm.ComponentVersion, res *ocm.Resource) (map[string]any, error) {
	r.Reads++
	v, ok := cv.(*Component).Values[res.Name]
	if !ok {
		return nil, fmt.Errorf("%w: plantest: no chart %s", errdef.ErrNotFound, res.Name)
	}
	return v, nil
}

func (r *Reader) ReadTree(_ context.Context, cv ocm.ComponentVersion, res *ocm.Resource) (plan.Tree, error) {
	r.Reads++
	files, ok := cv.(*Component).Trees[res.Name]
	if !ok {
		return plan.Tree{}, fmt.Errorf("%w: plantest: no tree %s", errdef.ErrNotFound, res.Name)
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	w := archive.NewWriter(&buf)
	for _, n := range names {
		if err := w.File(n, int64(len(files[n])), strings.NewReader(files[n])); err != nil {
			return plan.Tree{}, err
		}
	}
	if err := w.Close(); err != nil {
		return plan.Tree{}, err
	}
	t, err := archive.ReadTree(&buf)
	return plan.Tree{Tree: t}, err
}

// Described is a plan as data, for goldens: each step's resource (and
// component when it is another's), release, namespace, path, values,
// overlay, ordering, the objects it brings and the types of its finishing
// work, and the types of the plan's.
func Described(p *plan.Plan) map[string]any {
	var steps []any
	for _, s := range p.Steps {
		st := map[string]any{"resource": s.Resource.Identity().String()}
		if s.Component != nil {
			d := s.Component.Descriptor()
			st["component"] = d.Name + ":" + d.Version
		}
		for k, v := range map[string]any{"releaseName": s.ReleaseName, "namespace": s.Namespace, "path": s.Path} {
			if v != "" {
				st[k] = v
			}
		}
		if s.Values != nil {
			st["values"] = s.Values
		}
		if s.Overlay != nil {
			// As the kustomization the render builds over the entry.
			st["overlay"] = s.Overlay.Kustomization("<entry>", func(c string) string { return c })
		}
		if s.Ordering != nil {
			st["ordering"] = s.Ordering
		}
		if s.Objects != nil {
			st["objects"] = s.Objects
		}
		if f := typeNames(s.Finish); f != nil {
			st["finish"] = f
		}
		steps = append(steps, st)
	}
	out := map[string]any{"steps": steps}
	if f := typeNames(p.Finish); f != nil {
		out["finish"] = f
	}
	return out
}

func typeNames(fs []plan.Finisher) []any {
	var out []any
	for _, f := range fs {
		out = append(out, reflect.TypeOf(f).String())
	}
	return out
}

// Golden compares p (Described) with the YAML file path, semantically;
// update rewrites the file instead.
func Golden(t testing.TB, p *plan.Plan, path string, update bool) {
	t.Helper()
	got, err := yaml.Marshal(Described(p))
	if err != nil {
		t.Fatal(err)
	}
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		header := "# A golden plan (internal/testsupport/plantest.Described); rewritten by the test's -update flag: review every change.\n"
		if err := os.WriteFile(path, append([]byte(header), got...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to write it)", err)
	}
	var g, w any
	if err := yaml.Unmarshal(got, &g); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("plan differs from %s:\n%s", path, got)
	}
}
