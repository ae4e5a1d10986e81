package oci_test

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/oci"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/resolve"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

func TestLookupAndLocalBlobs(t *testing.T) {
	ctx := context.Background()
	d := makeData(t)
	reg := registrytest.Start(t)
	v3 := component(d, "2.0.0")
	v3.V3 = true
	reg.Push(t, "ocm", component(d, "1.0.0"), component(d, "1.1.0+build.7"), v3, component(d, "2.1.0-rc.1"))
	// A tag that is not a version is skipped by ListVersions.
	a, _ := component(d, "1.0.0").Artifact()
	reg.PushManifest(t, "ocm/component-descriptors/"+compName, "latest", "application/vnd.oci.image.manifest.v1+json", a.Manifest)

	for _, cacheDir := range []string{t.TempDir(), ""} { // with and without a disk cache
		r := open(t, reg, cacheDir)
		vs, err := r.ListVersions(ctx, compName)
		if err != nil || strings.Join(vs, ",") != "1.0.0,1.1.0+build.7,2.0.0,2.1.0-rc.1" {
			t.Fatalf("versions %v, %v", vs, err)
		}
		for _, ver := range vs {
			cv, err := r.LookupComponentVersion(ctx, compName, ver)
			if err != nil {
				t.Fatalf("%s: %v", ver, err)
			}
			if cv.Descriptor().Name != compName || cv.Descriptor().Version != ver || !strings.HasPrefix(cv.DescriptorDigest(), "sha256:") {
				t.Fatalf("%s: descriptor %s:%s digest %s", ver, cv.Descriptor().Name, cv.Descriptor().Version, cv.DescriptorDigest())
			}
			if cv.Repository() != ocm.Repository(r) {
				t.Fatal("Repository()")
			}
			for name, want := range map[string][]byte{"chart": d.set, "plainchart": d.chartTgz, "manifests": d.tree} {
				res, err := cv.Descriptor().Resource(ocm.Identity{"name": name})
				if err != nil {
					t.Fatal(err)
				}
				b, err := cv.OpenLocalBlob(ctx, res.Access)
				got := readBlob(t, b, err)
				if !bytes.Equal(got, want) || b.Digest() != blob.Digest(want) || b.Size() != int64(len(want)) || b.MediaType() != res.Access.String("mediaType") {
					t.Fatalf("%s %s: blob %s size %d media type %s", ver, name, b.Digest(), b.Size(), b.MediaType())
				}
			}
			res, _ := cv.Descriptor().Resource(ocm.Identity{"name": "image"})
			if _, err := cv.OpenLocalBlob(ctx, res.Access); !errors.Is(err, errdef.ErrUnsupportedAccess) {
				t.Fatalf("ociArtifact as local blob: %v", err)
			}
		}
		got, err := resolve.ResolveVersion(ctx, r, compName, "^1")
		if err != nil || got != "1.1.0+build.7" {
			t.Fatalf("^1: %s %v", got, err)
		}
	}

	r := open(t, reg, t.TempDir())
	_, err := r.LookupComponentVersion(ctx, compName, "9.9.9")
	if !errors.Is(err, errdef.ErrNotFound) || !strings.Contains(err.Error(), "available: 1.0.0, 1.1.0+build.7, 2.0.0, 2.1.0-rc.1") {
		t.Fatalf("unknown version: %v", err)
	}
	_, err = r.LookupComponentVersion(ctx, "example.com/nope", "1.0.0")
	if !errors.Is(err, errdef.ErrNotFound) || !strings.Contains(err.Error(), "example.com/nope") {
		t.Fatalf("unknown component: %v", err)
	}
	if _, err := r.ListVersions(ctx, "example.com/nope"); !errors.Is(err, errdef.ErrNotFound) {
		t.Fatalf("list unknown component: %v", err)
	}
	_, err = resolve.ResolveVersion(ctx, r, compName, ">=3")
	if !errors.Is(err, errdef.ErrNotFound) || !strings.Contains(err.Error(), "available") {
		t.Fatalf("constraint without match: %v", err)
	}
	// Hostile names and versions never reach the registry.
	reg.Reset()
	for _, c := range [][2]string{
		{"../../etc", "1.0.0"}, {"example.com//x", "1.0.0"}, {"Example.com/UPPER", "1.0.0"}, {compName, "1.0.0/../../x"},
		{compName, "bad version"}, {compName, ""}, {compName, "1.0.0@sha256:abc"}, {"", "1.0.0"}, {compName, strings.Repeat("1", 200)},
	} {
		if _, err := r.LookupComponentVersion(ctx, c[0], c[1]); !errors.Is(err, errdef.ErrInvalidInput) {
			t.Errorf("%q %q: %v, want ErrInvalidInput", c[0], c[1], err)
		}
	}
	if n := reg.Count(nil); n != 0 {
		t.Errorf("hostile input caused %d requests: %v", n, reg.Requests())
	}
}

const emptyManifest = `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.empty.v1+json","digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","size":2},"layers":[]}`

func TestDescriptorIndex(t *testing.T) {
	// A tag may name an index whose descriptor manifest is annotated.
	ctx := context.Background()
	d := makeData(t)
	reg := registrytest.Start(t)
	p := reg.Push(t, "ocm", component(d, "1.0.0"))[0]
	reg.PushBlob(t, p.Repository, []byte("{}"))
	other := reg.PushManifest(t, p.Repository, "", "application/vnd.oci.image.manifest.v1+json", []byte(emptyManifest))
	a, _ := component(d, "1.0.0").Artifact()
	idx := `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[` +
		`{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"` + other.Digest.String() + `","size":` + strconv.Itoa(len(emptyManifest)) + `},` +
		`{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"` + a.ManifestDigest + `","size":` + strconv.Itoa(len(a.Manifest)) + `,"annotations":{"software.ocm.descriptor":"true"}}]}`
	reg.PushManifest(t, p.Repository, "1.0.0", "application/vnd.oci.image.index.v1+json", []byte(idx))
	r := open(t, reg, t.TempDir())
	cv, err := r.LookupComponentVersion(ctx, compName, "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if cv.DescriptorDigest() != a.ManifestDigest {
		t.Fatalf("digest %s, want the annotated manifest %s", cv.DescriptorDigest(), a.ManifestDigest)
	}
}

func TestTransferredChart(t *testing.T) {
	ctx := context.Background()
	d := makeData(t)
	reg := registrytest.Start(t)
	pushed := reg.PushTransferred(t, "ocm", component(d, "1.0.0"))
	main, _ := ocmbuild.ArtifactSetMainDigest(d.set)
	r := open(t, reg, t.TempDir())
	cv, err := r.LookupComponentVersion(ctx, compName, "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	res, _ := cv.Descriptor().Resource(ocm.Identity{"name": "chart"})
	wantRef := "http://" + reg.Host + "/ocm/" + compName + "/mychart:0.2.0@" + main
	if res.Access.Kind() != ocm.AccessOCIArtifact || res.Access.String("imageReference") != wantRef {
		t.Fatalf("access %+v, want ociArtifact %s (pushed %+v)", res.Access, wantRef, pushed[0].Component.Resources[0].Access)
	}
	if res.Digest == nil || "sha256:"+res.Digest.Value != main {
		t.Fatalf("resource digest %+v", res.Digest)
	}
	// The plain chart and the tree stay local blobs.
	plain, _ := cv.Descriptor().Resource(ocm.Identity{"name": "plainchart"})
	if plain.Access.Kind() != ocm.AccessLocalBlob {
		t.Fatalf("plain chart access %s", plain.Access.Type)
	}

	reg.Reset()
	var resolver oci.ArtifactResolver = r
	b, md, err := resolver.OpenAccess(ctx, cv, res.Access)
	got := readBlob(t, b, err)
	if !bytes.Equal(got, d.chartTgz) || md != main || b.MediaType() != oci.MediaTypeHelmChart || b.Digest() != blob.Digest(d.chartTgz) {
		t.Fatalf("chart: %d bytes, manifest %s, media type %s", len(got), md, b.MediaType())
	}
	// Tag AND digest: the tag is never asked for.
	for _, q := range reg.Requests() {
		if strings.Contains(q.Path, "/manifests/0.2.0") {
			t.Fatalf("tag requested although the reference has a digest: %v", reg.Requests())
		}
	}
	ch := b.(*oci.Chart)
	if ch.Reference() != reg.Host+"/ocm/"+compName+"/mychart:0.2.0@"+main || ch.ManifestDigest() != main {
		t.Fatalf("chart reference %s", ch.Reference())
	}

	// relativeOciReference: relative to the registry host, not the sub path.
	rel := ocm.Access{Type: "relativeOciReference", Fields: map[string]any{"type": "relativeOciReference", "reference": "ocm/" + compName + "/mychart:0.2.0"}}
	b, md, err = resolver.OpenAccess(ctx, cv, rel)
	if got := readBlob(t, b, err); !bytes.Equal(got, d.chartTgz) || md != main {
		t.Fatal("relativeOciReference chart differs")
	}
	for _, bad := range []string{"http://evil.example.com/x:1", "/ocm/x:1", "", "../x:1"} {
		acc := ocm.Access{Type: "relativeOciReference", Fields: map[string]any{"reference": bad}}
		if _, _, err := resolver.OpenAccess(ctx, cv, acc); !errors.Is(err, errdef.ErrInvalidInput) {
			t.Errorf("relative reference %q: %v", bad, err)
		}
	}

	// localBlob whose layer is gone, with a globalAccess to the transferred chart.
	ga := ocm.Access{Type: "localBlob", Fields: map[string]any{
		"type": "localBlob", "localReference": blob.Digest([]byte("not a layer")), "mediaType": ocmbuild.MediaTypeArtifactSet,
		"globalAccess": map[string]any{"type": "ociArtifact", "imageReference": wantRef},
	}}
	gb, err := cv.OpenLocalBlob(ctx, ga)
	if got := readBlob(t, gb, err); !bytes.Equal(got, d.chartTgz) {
		t.Fatal("globalAccess chart differs")
	}

	// ociBlob access.
	ob := ocm.Access{Type: "ociBlob", Fields: map[string]any{"type": "ociBlob", "ref": reg.Host + "/ocm/" + compName + "/mychart",
		"digest": blob.Digest(d.chartTgz), "size": float64(len(d.chartTgz)), "mediaType": oci.MediaTypeHelmChart}}
	bb, _, err := resolver.OpenAccess(ctx, cv, ob)
	if got := readBlob(t, bb, err); !bytes.Equal(got, d.chartTgz) {
		t.Fatal("ociBlob differs")
	}

	// An artifact that is not a chart.
	reg.PushBlob(t, "ocm/other", []byte("{}"))
	reg.PushManifest(t, "ocm/other", "1", "application/vnd.oci.image.manifest.v1+json", []byte(emptyManifest))
	if _, err := r.Client().OpenChart(ctx, "http://"+reg.Host+"/ocm/other:1"); !errors.Is(err, errdef.ErrUnsupportedMediaType) {
		t.Fatalf("descriptor as chart: %v", err)
	}
	// A chart that does not exist.
	_, err = r.Client().OpenChart(ctx, "http://"+reg.Host+"/ocm/"+compName+"/mychart:9.9.9")
	if !errors.Is(err, errdef.ErrNotFound) || !strings.Contains(err.Error(), "registry "+reg.Host) || !strings.Contains(err.Error(), "9.9.9") {
		t.Fatalf("missing chart: %v", err)
	}
}
