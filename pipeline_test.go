package argocdocm_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/archive"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests/manifeststest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/examples"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/fixtures"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
)

// Every Helm component the OCM CLI wrote, in every store form, renders exactly
// what `helm template demo podinfo-mini-0.1.0.tgz -n demo --kube-version 1.31.0` does.
func TestRenderOCMCLIHelmComponents(t *testing.T) {
	want := manifeststest.ReadFile(t, fixtures.Path(t, "golden", "podinfo-mini-defaults.yaml"))
	cases := []struct{ repo, component, version string }{
		{"ctf", "example.com/fixtures/podinfo-app", "1.0.0"},
		{"ctf.tgz", "example.com/fixtures/podinfo-app", "1.0.0"},
		{"ctf", "example.com/fixtures/podinfo-app", "1.1.0+build.7"},
		{"ctf.tgz", "example.com/fixtures/podinfo-app-v3", "1.0.0"},
		{"ctf", "example.com/fixtures/podinfo-app-plainchart", "1.0.0"},
		{"component-archive", "example.com/fixtures/legacy-ca", "1.0.0"},
		{"ctf-signed.tgz", "example.com/fixtures/signed-app", "1.0.0"},
	}
	for _, c := range cases {
		t.Run(c.repo+"/"+c.component+":"+c.version, func(t *testing.T) {
			req := argocdocm.Request{
				Repository: fixtures.Path(t, c.repo), Component: c.component, Version: c.version,
				Resources: []string{"chart"}, ReleaseName: "demo", Namespace: "demo", KubeVersion: "1.31.0",
			}
			res, err := (&argocdocm.Renderer{}).Render(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			manifeststest.Equal(t, res.Objects, want)
		})
	}
}

func TestRenderValuesLayering(t *testing.T) {
	dir := t.TempDir()
	f1 := filepath.Join(dir, "a.yaml")
	f2 := filepath.Join(dir, "b.yaml")
	os.WriteFile(f1, []byte("image: {repository: mirror.local/podinfo, tag: '1'}\n"), 0o644)
	os.WriteFile(f2, []byte("image: {tag: '2'}\n"), 0o644)
	req := argocdocm.Request{
		Repository: fixtures.Path(t, "ctf"), Component: "example.com/fixtures/podinfo-app", Version: "1.0.0",
		ValueFiles: []string{f1, f2}, Values: map[string]any{"image": map[string]any{"tag": "3"}}, Set: []string{"image.tag=4"},
	}
	res, err := (&argocdocm.Renderer{}).Render(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	manifests.Encode(&buf, res.Objects)
	if !strings.Contains(buf.String(), "image: mirror.local/podinfo:4") {
		t.Fatalf("values not layered files < values < set:\n%s", buf.String())
	}
	req.Set = nil
	res, _ = (&argocdocm.Renderer{}).Render(context.Background(), req)
	buf.Reset()
	manifests.Encode(&buf, res.Objects)
	if !strings.Contains(buf.String(), "image: mirror.local/podinfo:3") {
		t.Fatalf("inline values do not win over files:\n%s", buf.String())
	}
}

// The bundled examples: the artifact-set and plain-chart forms of one chart agree.
func TestChartFormsAgree(t *testing.T) {
	repo := demoCTF(t)
	render := func(version string) []manifests.Object {
		res, err := (&argocdocm.Renderer{}).Render(context.Background(), argocdocm.Request{
			Repository: repo, Component: examples.Podinfo, Version: version, ReleaseName: "demo", Namespace: "demo",
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Objects) != 4 {
			t.Fatalf("%s: %d objects, want 4 (ConfigMap, Service, Deployment, test Pod)", version, len(res.Objects))
		}
		return res.Objects
	}
	manifeststest.Equal(t, render("1.1.0+build.7"), render("1.0.0"))
}

func TestRenderDirectoryTree(t *testing.T) {
	res, err := (&argocdocm.Renderer{}).Render(context.Background(), argocdocm.Request{
		Repository: demoCTF(t), Component: examples.Extras, Version: "1.0.0",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Objects) != 2 {
		t.Fatalf("got %d objects", len(res.Objects))
	}
	// kustomize features applied
	for _, o := range res.Objects {
		if o["metadata"].(map[string]any)["labels"].(map[string]any)["app.kubernetes.io/part-of"] != "podinfo" {
			t.Fatalf("labels not applied: %v", o)
		}
	}
}

func demoCTF(t *testing.T) string {
	t.Helper()
	comps, err := examples.Demo("testdata/src")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ctf")
	if err := ocmbuild.WriteCTF(dir, comps...); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The committed demo CTF is exactly what the generator makes from testdata/src.
func TestCommittedDemoIsUpToDate(t *testing.T) {
	want, err := ocmbuild.ReadDir(demoCTF(t))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ocmbuild.ReadDir("testdata/demo/ctf")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("testdata/demo/ctf has %d files, the generator makes %d: run make testdata", len(got), len(want))
	}
	for name, b := range want {
		if !bytes.Equal(got[name], b) {
			t.Fatalf("testdata/demo/ctf/%s differs from the generator's: run make testdata", name)
		}
	}
}

type tarEntry struct {
	name, link string
	typ        byte
	body       string
}

func mkTar(t *testing.T, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: 0o644, Size: int64(len(e.body))}
		if e.typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(e.body))
	}
	tw.Close()
	return buf.Bytes()
}

const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"

func TestHostileInputs(t *testing.T) {
	dir := t.TempDir()
	bomb := mkTar(t, tarEntry{name: "big.yaml", typ: tar.TypeReg, body: strings.Repeat("#", 4<<10)})
	comps := []*ocmbuild.Component{
		{Name: "example.com/hostile/app", Version: "1.0.0", Resources: []ocmbuild.Resource{
			{Name: "traversal", Type: "directoryTree", MediaType: ocmbuild.MediaTypeTar, Data: mkTar(t, tarEntry{name: "../../etc/passwd", typ: tar.TypeReg, body: cm})},
			{Name: "absolute", Type: "directoryTree", MediaType: ocmbuild.MediaTypeTar, Data: mkTar(t, tarEntry{name: "/etc/passwd", typ: tar.TypeReg, body: cm})},
			{Name: "symlink", Type: "directoryTree", MediaType: ocmbuild.MediaTypeTar, Data: mkTar(t, tarEntry{name: "cm.yaml", typ: tar.TypeSymlink, link: "../../../etc/passwd"})},
			{Name: "bomb", Type: "directoryTree", MediaType: ocmbuild.MediaTypeTar, Data: bomb},
			{Name: "s3", Type: "helmChart", Access: map[string]any{"type": "s3/v1", "bucket": "b", "key": "k"}},
			{Name: "remote", Type: "helmChart", Access: map[string]any{"type": "ociArtifact", "imageReference": "ghcr.io/x/y:1"}},
			{Name: "notachart", Type: "helmChart", MediaType: ocmbuild.MediaTypeHelmChart, Data: []byte("not a chart")},
			{Name: "image", Type: "ociImage", Access: map[string]any{"type": "ociArtifact", "imageReference": "ghcr.io/x/y:1"}},
		}},
	}
	ctfDir := filepath.Join(dir, "ctf")
	if err := ocmbuild.WriteCTF(ctfDir, comps...); err != nil {
		t.Fatal(err)
	}
	// A copy whose chart blob has one flipped byte.
	flipped := filepath.Join(dir, "flipped")
	examplesComps, _ := examples.Demo("testdata/src")
	if err := ocmbuild.WriteCTF(flipped, examplesComps...); err != nil {
		t.Fatal(err)
	}
	flipChartBlob(t, flipped)
	// A CTF whose descriptor is malformed.
	malformed := filepath.Join(dir, "malformed")
	bad := &ocmbuild.Component{Name: "example.com/hostile/app", Version: "1.0.0",
		RawDescriptor: []byte("meta: {schemaVersion: v2}\ncomponent: [this is: not a map\n")}
	if err := ocmbuild.WriteCTF(malformed, bad); err != nil {
		t.Fatal(err)
	}

	r := argocdocm.NewOfflineRenderer(archive.WithMaxSize(1 << 10))
	for _, tc := range []struct {
		name     string
		req      argocdocm.Request
		want     error
		mentions []string
	}{
		{"digest mismatch", argocdocm.Request{Repository: flipped, Component: examples.Podinfo, Version: "1.0.0"}, errdef.ErrDigestMismatch, []string{examples.Podinfo + ":1.0.0", "resource chart"}},
		{"path traversal", req(ctfDir, "traversal"), errdef.ErrUnsafeArchive, []string{"resource traversal", "../../etc/passwd"}},
		{"absolute path", req(ctfDir, "absolute"), errdef.ErrUnsafeArchive, []string{"resource absolute", "/etc/passwd"}},
		{"escaping symlink", req(ctfDir, "symlink"), errdef.ErrUnsafeArchive, []string{"resource symlink", "cm.yaml"}},
		{"oversized archive", req(ctfDir, "bomb"), errdef.ErrLimitExceeded, []string{"resource bomb", "big.yaml"}},
		{"unknown component", argocdocm.Request{Repository: ctfDir, Component: "example.com/hostile/nope", Version: "1.0.0"}, errdef.ErrNotFound, []string{"example.com/hostile/nope"}},
		{"unknown version", argocdocm.Request{Repository: ctfDir, Component: "example.com/hostile/app", Version: "2.0.0"}, errdef.ErrNotFound, []string{"2.0.0", "available: 1.0.0"}},
		{"unknown resource", req(ctfDir, "nope"), errdef.ErrNotFound, []string{"resource nope", "traversal"}},
		{"not renderable", req(ctfDir, "image"), errdef.ErrUnsupportedMediaType, []string{"image", "ociImage"}},
		{"ambiguous default", argocdocm.Request{Repository: ctfDir, Component: "example.com/hostile/app", Version: "1.0.0"}, errdef.ErrInvalidInput, []string{"renderable resources"}},
		{"unsupported access", req(ctfDir, "s3"), errdef.ErrUnsupportedAccess, []string{"resource s3", "s3/v1"}},
		{"remote access offline", req(ctfDir, "remote"), errdef.ErrUnsupportedAccess, []string{"resource remote", "ghcr.io/x/y:1"}},
		{"not a chart", req(ctfDir, "notachart"), errdef.ErrRender, []string{"resource notachart"}},
		{"malformed descriptor", argocdocm.Request{Repository: malformed, Component: "example.com/hostile/app", Version: "1.0.0"}, errdef.ErrInvalidDescriptor, []string{"example.com/hostile/app:1.0.0"}},
		{"missing repository", argocdocm.Request{Repository: filepath.Join(dir, "nothing"), Component: "example.com/hostile/app", Version: "1.0.0"}, errdef.ErrNotFound, []string{"nothing"}},
		{"missing inputs", argocdocm.Request{Application: "shop"}, errdef.ErrInvalidInput, []string{"application shop", "repository, component, version"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.Application = "shop"
			_, err := r.Render(context.Background(), tc.req)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			var e *errdef.Error
			if !errors.As(err, &e) || e.Application != "shop" {
				t.Fatalf("not an errdef.Error with the application: %#v", err)
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("message is not one line: %q", msg)
			}
			for _, m := range tc.mentions {
				if !strings.Contains(msg, m) {
					t.Errorf("message %q does not mention %q", msg, m)
				}
			}
		})
	}
}

func req(repo, resource string) argocdocm.Request {
	return argocdocm.Request{Repository: repo, Component: "example.com/hostile/app", Version: "1.0.0", Resources: []string{resource}}
}

// flipChartBlob flips a byte in the largest blob: the podinfo artifact set.
func flipChartBlob(t *testing.T, ctfDir string) {
	t.Helper()
	comps, _ := examples.Demo("testdata/src")
	a, err := comps[0].Artifact()
	if err != nil {
		t.Fatal(err)
	}
	var chartDigest string
	for d, b := range a.Blobs {
		if len(b) > 1000 && d != a.ManifestDigest && !strings.Contains(string(b[:min(len(b), 300)]), "component-descriptor") {
			chartDigest = d
		}
	}
	p := filepath.Join(ctfDir, "blobs", strings.Replace(chartDigest, ":", ".", 1))
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	os.WriteFile(p, b, 0o644)
}
