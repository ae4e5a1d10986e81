package artifactset

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/archive"
)

// setTar is an artifact set tgz of index.json idx and blobs.
func setTar(t *testing.T, idx ocispec.Index, blobs ...[]byte) []byte {
	t.Helper()
	idx.SchemaVersion = 2
	idx.MediaType = ocispec.MediaTypeImageIndex
	ib, err := json.Marshal(idx)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := archive.NewWriter(&buf, archive.WithGzip())
	files := [][2][]byte{{[]byte("index.json"), ib}, {[]byte("oci-layout"), []byte(`{"imageLayoutVersion": "1.0.0"}`)}}
	for _, b := range blobs {
		files = append(files, [2][]byte{[]byte("blobs/" + strings.Replace(digest.FromBytes(b).String(), ":", ".", 1)), b})
	}
	for _, f := range files {
		if err := tw.File(string(f[0]), int64(len(f[1])), bytes.NewReader(f[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Read (a set held in memory: rendering, verification) and Open (a set
// unpacked to a file: transfer) find the same main manifest, where OCM's
// artifact set finds it (RetrieveMainArtifactFromIndex, GetMain and
// GetArtifact of its artifactset package): the manifest index.json lists
// whose digest, or one of whose tags (software.ocm/tags), the
// software.ocm/main annotation names; without the annotation the only
// manifest listed. A main manifest index.json does not list is not found,
// although its blob is in the set (Open took it by its digest; Read
// refused it); nor is one among several that nothing names.
func TestReadersAgreeOnTheMainManifest(t *testing.T) {
	cfg, layer := []byte(`{}`), []byte("chart content")
	manifest := func(name string) ([]byte, ocispec.Descriptor) {
		m := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest,
			Config:      ocispec.Descriptor{MediaType: "application/vnd.cncf.helm.config.v1+json", Digest: digest.FromBytes(cfg), Size: int64(len(cfg))},
			Layers:      []ocispec.Descriptor{{MediaType: "application/vnd.cncf.helm.chart.content.v1.tar+gzip", Digest: digest.FromBytes(layer), Size: int64(len(layer))}},
			Annotations: map[string]string{"name": name}}
		m.SchemaVersion = 2
		b, _ := json.Marshal(m)
		return b, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(b), Size: int64(len(b))}
	}
	first, firstDesc := manifest("first")
	second, secondDesc := manifest("second")
	tagged := secondDesc
	tagged.Annotations = map[string]string{AnnotationTags: "latest,1.0.0"}
	blobs := [][]byte{first, second, cfg, layer}
	main := func(v string) map[string]string { return map[string]string{AnnotationMain: v} }
	for _, tc := range []struct {
		name string
		idx  ocispec.Index
		want digest.Digest // "" refused as an invalid descriptor
	}{
		{"named by digest", ocispec.Index{Manifests: []ocispec.Descriptor{firstDesc, secondDesc}, Annotations: main(secondDesc.Digest.String())}, secondDesc.Digest},
		{"named by tag", ocispec.Index{Manifests: []ocispec.Descriptor{firstDesc, tagged}, Annotations: main("1.0.0")}, secondDesc.Digest},
		{"the only one listed", ocispec.Index{Manifests: []ocispec.Descriptor{secondDesc}}, secondDesc.Digest},
		{"named but not listed", ocispec.Index{Manifests: []ocispec.Descriptor{firstDesc}, Annotations: main(secondDesc.Digest.String())}, ""},
		{"named, none listed", ocispec.Index{Annotations: main(secondDesc.Digest.String())}, ""},
		{"tag nobody has", ocispec.Index{Manifests: []ocispec.Descriptor{firstDesc, tagged}, Annotations: main("2.0.0")}, ""},
		{"several, none named", ocispec.Index{Manifests: []ocispec.Descriptor{firstDesc, secondDesc}}, ""},
		{"none", ocispec.Index{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := setTar(t, tc.idx, blobs...)
			check := func(reader string, got ocispec.Descriptor, err error) {
				t.Helper()
				switch {
				case tc.want == "" && !errors.Is(err, errdef.ErrInvalidDescriptor):
					t.Errorf("%s: main %s, error %v; want ErrInvalidDescriptor", reader, got.Digest, err)
				case tc.want != "" && (err != nil || got.Digest != tc.want):
					t.Errorf("%s: main %s, error %v; want %s", reader, got.Digest, err, tc.want)
				case err != nil && strings.Contains(err.Error(), "\n"):
					t.Errorf("%s: error %q is not one line", reader, err)
				}
			}
			s, err := Read(data)
			var got ocispec.Descriptor
			if s != nil {
				got = s.Main
			}
			check("Read", got, err)
			f, err := Open(bytes.NewReader(data), int64(len(data)), t.TempDir())
			got = ocispec.Descriptor{}
			if f != nil {
				got = f.Main
				f.Close()
			}
			check("Open", got, err)
		})
	}
}
