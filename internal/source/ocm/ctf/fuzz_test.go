package ctf_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/ctf"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/ocimapping"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/fixtures"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// sentinels are the errors every failure of the CTF reader must wrap one of.
var sentinels = []error{
	errdef.ErrNotFound, errdef.ErrInvalidDescriptor, errdef.ErrInvalidInput, errdef.ErrDigestMismatch,
	errdef.ErrUnsupportedAccess, errdef.ErrUnsupportedMediaType, errdef.ErrUnsafeArchive, errdef.ErrLimitExceeded,
}

func classified(err error) bool {
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// explore does what a render does with a repository: list, look up every
// indexed component version, read every local blob. Failures must be
// classified; a blob that reads to the end matches the digest it claims.
func explore(t *testing.T, r ocm.Repository) {
	t.Helper()
	ctx := context.Background()
	var names [][2]string
	switch r := r.(type) {
	case *ctf.Repository:
		for _, a := range r.Artifacts() {
			names = append(names, [2]string{strings.TrimPrefix(a.Repository, "component-descriptors/"), ocm.TagToVersion(a.Tag)})
		}
	case *ctf.ComponentArchive:
		d := r.Descriptor()
		names = append(names, [2]string{d.Name, d.Version})
	}
	if len(names) > 16 {
		names = names[:16]
	}
	for _, n := range names {
		comp, version := n[0], n[1]
		if vs, err := r.ListVersions(ctx, comp); err != nil && !classified(err) {
			t.Fatalf("ListVersions(%q): unclassified error %v", comp, err)
		} else if err == nil && len(vs) == 0 {
			t.Fatalf("ListVersions(%q): no versions and no error", comp)
		}
		cv, err := r.LookupComponentVersion(ctx, comp, version)
		if err != nil {
			if !classified(err) {
				t.Fatalf("LookupComponentVersion(%q, %q): unclassified error %v", comp, version, err)
			}
			continue
		}
		d := cv.Descriptor()
		if d.Name != comp || d.Version != version {
			t.Fatalf("looked up %s:%s, got %s:%s", comp, version, d.Name, d.Version)
		}
		for i := range d.Resources {
			if i == 8 {
				break
			}
			res := &d.Resources[i]
			b, err := cv.OpenLocalBlob(ctx, res.Access)
			if err != nil {
				if !classified(err) {
					t.Fatalf("OpenLocalBlob(%s): unclassified error %v", res.Name, err)
				}
				continue
			}
			data, err := io.ReadAll(io.LimitReader(b, 1<<20))
			b.Close()
			if err != nil {
				if !classified(err) {
					t.Fatalf("reading %s: unclassified error %v", res.Name, err)
				}
				continue
			}
			if dg := b.Digest(); dg != "" && len(data) < 1<<20 && blob.Digest(data) != dg {
				t.Fatalf("blob of %s read without error but hashes to %s, not %s", res.Name, blob.Digest(data), dg)
			}
		}
	}
}

// FuzzCTFIndex opens a CTF directory whose artifact-index.json and component
// descriptor are fuzzed. The harness stores the descriptor as the OCM CLI
// does (descriptor layer tar, component config, manifest) plus one payload
// blob; "MANIFEST" in the index and "PAYLOAD" in the descriptor are replaced
// by their digests, so mutations explore lookups that reach the descriptor
// and its blobs, not just the JSON parser.
func FuzzCTFIndex(f *testing.F) {
	const comp = "example.com/fuzz/app"
	index := func(entries ...string) string {
		return `{"schemaVersion":1,"artifacts":[` + strings.Join(entries, ",") + `]}`
	}
	entry := func(repo, tag, digest, mt string) string {
		return `{"repository":"` + repo + `","tag":"` + tag + `","digest":"` + digest + `","mediaType":"` + mt + `"}`
	}
	desc := "meta: {schemaVersion: v2}\ncomponent:\n  name: " + comp + "\n  version: 1.0.0\n  provider: acme.org\n  resources:\n" +
		"  - {name: data, type: blob, relation: local, access: {type: localBlob, localReference: PAYLOAD, mediaType: text/plain}}\n" +
		"  - {name: file, type: blob, relation: local, access: {type: localFilesystemBlob, fileName: PAYLOAD}}\n" +
		"  - {name: chunks, type: blob, relation: local, access: {type: localBlob, localReference: 'PAYLOAD,PAYLOAD'}}\n" +
		"  - {name: remote, type: blob, relation: external, access: {type: ociArtifact, imageReference: ghcr.io/a/b:1}}\n"
	mt := "application/vnd.oci.image.manifest.v1+json"
	for _, s := range [][2]string{
		{index(entry("component-descriptors/"+comp, "1.0.0", "MANIFEST", mt)), desc},
		{index(entry("component-descriptors/"+comp, "1.0.0", "MANIFEST", "")), strings.Replace(desc, "1.0.0", "1.0.0+build.1", 1)},
		{index(entry("component-descriptors/"+comp, "1.0.0.build-build.1", "MANIFEST", mt), entry("component-descriptors/"+comp, "", "MANIFEST", mt)), strings.Replace(desc, "1.0.0", "1.0.0+build.1", 1)},
		{index(entry("component-descriptors/"+comp, "1.0.0", "sha256:"+strings.Repeat("0", 64), mt)), desc},
		{index(entry("component-descriptors/"+comp, "1.0.0", "MANIFEST", "application/vnd.oci.image.index.v1+json")), desc},
		{index(entry("component-descriptors/../../etc", "1.0.0", "MANIFEST", mt)), desc},
		{`{"schemaVersion":2}`, desc},
		{index(entry("component-descriptors/"+comp, "1.0.0", "MANIFEST", mt)), `{"apiVersion":"ocm.software/v3alpha1","kind":"ComponentVersion","metadata":{"name":"` + comp + `","version":"1.0.0"},"spec":{"resources":[{"name":"r","type":"t","access":{"type":"localBlob","localReference":"PAYLOAD"}}]}}`},
	} {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	payload := []byte("payload\n")
	f.Fuzz(func(t *testing.T, idx, descriptor []byte) {
		if len(idx) > 64<<10 || len(descriptor) > 64<<10 {
			return
		}
		dir := t.TempDir()
		os.Mkdir(filepath.Join(dir, ctf.BlobsDir), 0o755)
		put := func(b []byte) string {
			d := blob.Digest(b)
			os.WriteFile(filepath.Join(dir, ctf.BlobsDir, strings.Replace(d, ":", ".", 1)), b, 0o644)
			return d
		}
		pd := put(payload)
		descriptor = []byte(strings.ReplaceAll(string(descriptor), "PAYLOAD", pd))
		layer, err := ocmbuild.TarFiles(map[string][]byte{"component-descriptor.yaml": descriptor}, false)
		if err != nil {
			t.Fatal(err)
		}
		ld := put(layer)
		cfg, _ := json.Marshal(map[string]any{"componentDescriptorLayer": map[string]any{"mediaType": ocimapping.MediaTypeDescriptorTar, "digest": ld, "size": len(layer)}})
		cd := put(cfg)
		manifest, _ := json.Marshal(map[string]any{
			"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
			"config": map[string]any{"mediaType": ocimapping.MediaTypeComponentConfig, "digest": cd, "size": len(cfg)},
			"layers": []any{
				map[string]any{"mediaType": ocimapping.MediaTypeDescriptorTar, "digest": ld, "size": len(layer)},
				map[string]any{"mediaType": "text/plain", "digest": pd, "size": len(payload)},
			},
		})
		md := put(manifest)
		os.WriteFile(filepath.Join(dir, ctf.IndexFileName), []byte(strings.ReplaceAll(string(idx), "MANIFEST", md)), 0o644)

		r, err := ctf.Open(dir)
		if err != nil {
			if !classified(err) {
				t.Fatalf("Open: unclassified error %v", err)
			}
			return
		}
		defer r.Close()
		explore(t, r)
	})
}

// FuzzCTFArchive opens arbitrary bytes as a CTF (or component archive) file:
// tar or tgz, detected by content. Seeds: the OCM CLI's CTF archives and
// component archive, and CTFs written here.
func FuzzCTFArchive(f *testing.F) {
	for _, name := range []string{"ctf.tgz", "ctf-signed.tgz"} {
		b, err := os.ReadFile(fixtures.Path(f, name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	caFiles, err := ocmbuild.ReadDir(fixtures.Path(f, "component-archive"))
	if err != nil {
		f.Fatal(err)
	}
	ca, err := ocmbuild.TarFiles(caFiles, false)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(ca)
	small := &ocmbuild.Component{Name: "example.com/fuzz/app", Version: "1.0.0", Resources: []ocmbuild.Resource{
		{Name: "data", Type: "blob", MediaType: "text/plain", Data: []byte("hello\n")}}}
	files, err := ocmbuild.CTF(small)
	if err != nil {
		f.Fatal(err)
	}
	for _, gz := range []bool{false, true} {
		b, err := ocmbuild.TarFiles(files, gz)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("not an archive"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		p := filepath.Join(dir, "ctf.tar")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := ctf.Open(p, ctf.WithMaxSize(32<<20), ctf.WithMaxEntries(1000), ctf.WithTempDir(dir))
		if err != nil {
			if !classified(err) {
				t.Fatalf("Open: unclassified error %v", err)
			}
			return
		}
		defer r.Close()
		explore(t, r)
	})
}
