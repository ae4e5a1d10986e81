package ocmbuild

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
)

// ReadDir reads every regular file under dir into a map keyed by slash path.
func ReadDir(dir string) (map[string][]byte, error) {
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		files[filepath.ToSlash(rel)] = b
		return err
	})
	return files, err
}

// PackageChart makes a chart archive as `helm package` lays it out: every file
// under <chart name>/ in a tgz. files are relative to the chart root.
func PackageChart(files map[string][]byte) ([]byte, error) {
	meta, ok := files["Chart.yaml"]
	if !ok {
		return nil, fmt.Errorf("chart has no Chart.yaml")
	}
	var c struct {
		Name string `json:"name"`
	}
	if err := yaml.Unmarshal(meta, &c); err != nil || c.Name == "" {
		return nil, fmt.Errorf("chart metadata (Chart.yaml): no name (%v)", err)
	}
	prefixed := make(map[string][]byte, len(files))
	for n, b := range files {
		prefixed[path.Join(c.Name, n)] = b
	}
	return TarFiles(prefixed, true)
}

// ChartArtifactSet wraps a chart archive in an OCM OCI artifact set
// (application/vnd.oci.image.manifest.v1+tar+gzip): index.json annotated with
// software.ocm/main, oci-layout and flat blobs/sha256.<hex>, as the OCM CLI's
// helm input writes it. nestedBlobDirs writes blobs/sha256/<hex> instead.
func ChartArtifactSet(chartTgz []byte, tag string, nestedBlobDirs bool) ([]byte, error) {
	meta, err := chartMetadataJSON(chartTgz)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	put := func(mt string, b []byte) ocispec.Descriptor {
		d := blob.Digest(b)
		name := "blobs/" + strings.Replace(d, ":", ".", 1)
		if nestedBlobDirs {
			name = "blobs/" + strings.Replace(d, ":", "/", 1)
		}
		files[name] = b
		return ocispec.Descriptor{MediaType: mt, Digest: digest.Digest(d), Size: int64(len(b))}
	}
	m := ocispec.Manifest{
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    put(MediaTypeHelmConfig, meta),
		Layers:    []ocispec.Descriptor{put(MediaTypeHelmChart, chartTgz)},
	}
	m.SchemaVersion = 2
	mb, _ := json.Marshal(m)
	md := put(ocispec.MediaTypeImageManifest, mb)
	md.Annotations = map[string]string{"org.opencontainers.image.ref.name": tag, "software.ocm/tags": tag}
	idx := ocispec.Index{MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{md},
		Annotations: map[string]string{"software.ocm/main": md.Digest.String()}}
	idx.SchemaVersion = 2
	files["index.json"], _ = json.Marshal(idx)
	files["oci-layout"] = []byte(`{"imageLayoutVersion": "1.0.0"}`)
	return TarFiles(files, true)
}

// ArtifactSetMainDigest returns the software.ocm/main manifest digest of an artifact set.
func ArtifactSetMainDigest(set []byte) (string, error) {
	files, err := untarAll(set)
	if err != nil {
		return "", err
	}
	var idx ocispec.Index
	if err := json.Unmarshal(files["index.json"], &idx); err != nil {
		return "", fmt.Errorf("artifact set index.json: %w", err)
	}
	if m := idx.Annotations["software.ocm/main"]; m != "" {
		return m, nil
	}
	if len(idx.Manifests) == 0 {
		return "", fmt.Errorf("artifact set has no manifests")
	}
	return idx.Manifests[0].Digest.String(), nil
}

func chartMetadataJSON(chartTgz []byte) ([]byte, error) {
	files, err := untarAll(chartTgz)
	if err != nil {
		return nil, err
	}
	for n, b := range files {
		if strings.Count(n, "/") == 1 && strings.HasSuffix(n, "/Chart.yaml") {
			return yaml.YAMLToJSON(b)
		}
	}
	return nil, fmt.Errorf("chart archive has no <name>/Chart.yaml")
}
