package ocmbuild

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/ocimapping"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// Media types of resource content.
const (
	MediaTypeArtifactSet = "application/vnd.oci.image.manifest.v1+tar+gzip"
	MediaTypeHelmChart   = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
	MediaTypeHelmConfig  = "application/vnd.cncf.helm.config.v1+json"
	MediaTypeTar         = "application/x-tar"
	MediaTypeTgz         = "application/x-tgz"
	MediaTypeYAML        = "application/x-yaml"
)

// fixedTime keeps archives byte-stable; the OCM CLI uses the same date.
var fixedTime = time.Date(2022, 1, 1, 0, 0, 0, 0, time.UTC)

// Label of a component or element.
type Label struct {
	Name    string
	Value   any
	Signing bool
}

// Component is a component version to write.
type Component struct {
	Name, Version string
	Provider      string
	CreationTime  string // default "2026-01-01T00:00:00Z"
	Labels        []Label
	Resources     []Resource
	References    []Reference
	V3            bool // serialise as ocm.software/v3alpha1 instead of v2
	// RawDescriptor replaces the generated descriptor (for malformed-input
	// and tampering tests); Blobs are then the local blobs to store as layers.
	RawDescriptor []byte
	Blobs         []Blob
}

// Blob is a local blob stored as a layer next to a RawDescriptor.
type Blob struct {
	MediaType string
	Data      []byte
}

// Resource of a component. Set Data for a local blob, or Access for an
// external (or already transferred) resource.
type Resource struct {
	Name, Version, Type string
	Relation            string // default: local with Data, external without
	ExtraIdentity       map[string]string
	Labels              []Label
	Data                []byte
	MediaType           string
	ReferenceName       string
	Access              map[string]any
	// Digest overrides the computed resource digest; NoDigest leaves it out.
	Digest   *ocm.Digest
	NoDigest bool
}

// Reference to another component version.
type Reference struct {
	Name, ComponentName, Version string
	Labels                       []Label
	Digest                       *ocm.Digest
}

// Artifact is a component version as OCI content: a manifest and its blobs.
type Artifact struct {
	Manifest       []byte
	ManifestDigest string
	Blobs          map[string][]byte // digest → content, config and layers
}

func labels(ls []Label) []map[string]any {
	if len(ls) == 0 {
		return nil
	}
	out := make([]map[string]any, 0, len(ls))
	for _, l := range ls {
		m := map[string]any{"name": l.Name, "value": l.Value}
		if l.Signing {
			m["signing"] = true
		}
		out = append(out, m)
	}
	return out
}

// resourceDigest mirrors the OCM CLI: artifact sets get ociArtifactDigest/v1 (the
// main manifest digest), other blobs genericBlobDigest/v1.
func (r Resource) digest() (*ocm.Digest, error) {
	if r.NoDigest || (r.Data == nil && r.Digest == nil) {
		return nil, nil
	}
	if r.Digest != nil {
		return r.Digest, nil
	}
	if r.MediaType == MediaTypeArtifactSet {
		main, err := ArtifactSetMainDigest(r.Data)
		if err != nil {
			return nil, fmt.Errorf("resource %s: %w", r.Name, err)
		}
		return &ocm.Digest{HashAlgorithm: "SHA-256", NormalisationAlgorithm: "ociArtifactDigest/v1", Value: strings.TrimPrefix(main, "sha256:")}, nil
	}
	return &ocm.Digest{HashAlgorithm: "SHA-256", NormalisationAlgorithm: "genericBlobDigest/v1", Value: strings.TrimPrefix(blob.Digest(r.Data), "sha256:")}, nil
}

func (r Resource) access() map[string]any {
	if r.Data == nil {
		return r.Access
	}
	a := map[string]any{"type": "localBlob", "localReference": blob.Digest(r.Data), "mediaType": r.MediaType}
	if r.ReferenceName != "" {
		a["referenceName"] = r.ReferenceName
	}
	return a
}

// DescriptorYAML renders the component descriptor.
func (c *Component) DescriptorYAML() ([]byte, error) {
	if c.RawDescriptor != nil {
		return c.RawDescriptor, nil
	}
	ct := c.CreationTime
	if ct == "" {
		ct = "2026-01-01T00:00:00Z"
	}
	provider := c.Provider
	if provider == "" {
		provider = "example.com"
	}
	var resources []map[string]any
	for _, r := range c.Resources {
		rel := r.Relation
		if rel == "" {
			rel = "external"
			if r.Data != nil {
				rel = "local"
			}
		}
		version := r.Version
		if version == "" {
			version = c.Version
		}
		m := map[string]any{"name": r.Name, "version": version, "type": r.Type, "relation": rel, "access": r.access()}
		if len(r.ExtraIdentity) > 0 {
			m["extraIdentity"] = r.ExtraIdentity
		}
		if l := labels(r.Labels); l != nil {
			m["labels"] = l
		}
		d, err := r.digest()
		if err != nil {
			return nil, err
		}
		if d != nil {
			m["digest"] = d
		}
		resources = append(resources, m)
	}
	refs := []map[string]any{}
	for _, r := range c.References {
		m := map[string]any{"name": r.Name, "componentName": r.ComponentName, "version": r.Version}
		if l := labels(r.Labels); l != nil {
			m["labels"] = l
		}
		if r.Digest != nil {
			m["digest"] = r.Digest
		}
		refs = append(refs, m)
	}
	if resources == nil {
		resources = []map[string]any{}
	}
	var doc map[string]any
	if c.V3 {
		meta := map[string]any{"name": c.Name, "version": c.Version, "creationTime": ct, "provider": map[string]any{"name": provider}}
		if l := labels(c.Labels); l != nil {
			meta["labels"] = l
		}
		spec := map[string]any{"resources": resources}
		if len(refs) > 0 {
			spec["references"] = refs
		}
		doc = map[string]any{"apiVersion": ocm.SchemaV3Alpha1, "kind": "ComponentVersion", "metadata": meta, "repositoryContexts": []any{}, "spec": spec}
	} else {
		comp := map[string]any{
			"name": c.Name, "version": c.Version, "creationTime": ct, "provider": provider,
			"repositoryContexts": []any{}, "resources": resources, "sources": []any{}, "componentReferences": refs,
		}
		if l := labels(c.Labels); l != nil {
			comp["labels"] = l
		}
		doc = map[string]any{"meta": map[string]any{"schemaVersion": "v2"}, "component": comp}
	}
	return yaml.Marshal(doc)
}

// Artifact builds the OCI manifest and blobs of the component version, laid out
// as the OCM CLI does: config, descriptor layer (tar), then one layer per local blob.
func (c *Component) Artifact() (*Artifact, error) {
	desc, err := c.DescriptorYAML()
	if err != nil {
		return nil, err
	}
	descTar, err := TarFiles(map[string][]byte{"component-descriptor.yaml": desc}, false)
	if err != nil {
		return nil, err
	}
	a := &Artifact{Blobs: map[string][]byte{}}
	add := func(mt string, b []byte, ann map[string]string) ocispec.Descriptor {
		d := ocispec.Descriptor{MediaType: mt, Digest: digest.Digest(blob.Digest(b)), Size: int64(len(b)), Annotations: ann}
		a.Blobs[d.Digest.String()] = b
		return d
	}
	descLayer := add(ocimapping.MediaTypeDescriptorTar, descTar, nil)
	cfg, _ := json.Marshal(map[string]any{"componentDescriptorLayer": descLayer})
	m := ocispec.Manifest{
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    add(ocimapping.MediaTypeComponentConfig, cfg, nil),
		Layers:    []ocispec.Descriptor{descLayer},
		Annotations: map[string]string{
			ocimapping.AnnotationComponentVersion: c.Name + ":" + c.Version,
			"software.ocm.creator":                "argocd-ocm-plugin ocmbuild",
		},
	}
	m.SchemaVersion = 2
	seen := map[string]bool{}
	for _, b := range c.Blobs {
		d := add(b.MediaType, b.Data, nil)
		if !seen[d.Digest.String()] {
			seen[d.Digest.String()] = true
			m.Layers = append(m.Layers, d)
		}
	}
	for _, r := range c.Resources {
		if r.Data == nil {
			continue
		}
		id := map[string]any{"name": r.Name}
		for k, v := range r.ExtraIdentity {
			id[k] = v
		}
		art, _ := json.Marshal([]any{map[string]any{"kind": "resource", "identity": id}})
		d := add(r.MediaType, r.Data, map[string]string{ocimapping.AnnotationArtifact: string(art)})
		if seen[d.Digest.String()] {
			continue // same content twice is stored once
		}
		seen[d.Digest.String()] = true
		m.Layers = append(m.Layers, d)
	}
	a.Manifest, err = json.Marshal(m)
	if err != nil {
		return nil, err
	}
	a.ManifestDigest = blob.Digest(a.Manifest)
	a.Blobs[a.ManifestDigest] = a.Manifest
	return a, nil
}

// TarFiles writes files (sorted by name, fixed time) as a tar, gzip-compressed
// when gz is set. Directories are implied.
func TarFiles(files map[string][]byte, gz bool) ([]byte, error) {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		h := &tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n])), ModTime: fixedTime, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(files[n]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if !gz {
		return buf.Bytes(), nil
	}
	return gzipBytes(buf.Bytes())
}
