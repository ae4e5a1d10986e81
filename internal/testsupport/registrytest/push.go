package registrytest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// Repository returns an oras-go client for a repository of the registry,
// authenticated when the registry requires basic auth.
func (r *Registry) Repository(t testing.TB, repo string) *remote.Repository {
	t.Helper()
	rr, err := remote.NewRepository(r.Host + "/" + repo)
	if err != nil {
		t.Fatalf("repository %s: %v", repo, err)
	}
	rr.PlainHTTP = r.server.TLS == nil
	c := &auth.Client{Client: r.server.Client()}
	if r.Username != "" {
		c.Credential = auth.StaticCredential(r.Host, auth.Credential{Username: r.Username, Password: r.Password})
	}
	rr.Client = c
	return rr
}

// PushBlob pushes one blob into repo.
func (r *Registry) PushBlob(t testing.TB, repo string, b []byte) ocispec.Descriptor {
	t.Helper()
	d := ocispec.Descriptor{MediaType: "application/octet-stream", Digest: digest.FromBytes(b), Size: int64(len(b))}
	if err := r.Repository(t, repo).Blobs().Push(context.Background(), d, bytes.NewReader(b)); err != nil {
		t.Fatalf("push blob %s to %s: %v", d.Digest, repo, err)
	}
	return d
}

// PushManifest pushes a manifest (or index) into repo, tagged when tag is set.
func (r *Registry) PushManifest(t testing.TB, repo, tag, mediaType string, b []byte) ocispec.Descriptor {
	t.Helper()
	d := ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(b), Size: int64(len(b))}
	ms := r.Repository(t, repo).Manifests()
	var err error
	if tag != "" {
		err = ms.PushReference(context.Background(), d, bytes.NewReader(b), tag)
	} else {
		err = ms.Push(context.Background(), d, bytes.NewReader(b))
	}
	if err != nil {
		t.Fatalf("push manifest %s to %s: %v", d.Digest, repo, err)
	}
	return d
}

// Pushed is a component version in the registry.
type Pushed struct {
	Component      *ocmbuild.Component
	Repository     string // <base>/component-descriptors/<name>
	Tag            string
	ManifestDigest string
}

// Push pushes component versions as the OCM CLI does: the descriptor
// manifest and its blobs at <base>/component-descriptors/<name>:<tag>, with
// the tag mapping of ocm.VersionToTag. base may be "".
func (r *Registry) Push(t testing.TB, base string, comps ...*ocmbuild.Component) []Pushed {
	t.Helper()
	var out []Pushed
	for _, c := range comps {
		a, err := c.Artifact()
		if err != nil {
			t.Fatalf("component %s:%s: %v", c.Name, c.Version, err)
		}
		repo := path.Join(base, ocm.DescriptorRepository(c.Name))
		for d, b := range a.Blobs {
			if d == a.ManifestDigest {
				continue
			}
			r.PushBlob(t, repo, b)
		}
		tag := ocm.VersionToTag(c.Version)
		r.PushManifest(t, repo, tag, ocispec.MediaTypeImageManifest, a.Manifest)
		out = append(out, Pushed{Component: c, Repository: repo, Tag: tag, ManifestDigest: a.ManifestDigest})
	}
	return out
}

// PushTransferred pushes component versions as `ocm transfer
// --copy-resources` leaves them in a registry: every local blob that is an OCI
// artifact set (a Helm chart) is pushed as its own artifact at
// <base>/<component>/<chart name>:<chart version>, and its access becomes
// ociArtifact with imageReference
// http://<host>/<base>/<component>/<chart name>:<tag>@sha256:<manifest>
// ("https://" for a WithTLS registry), relation local, resource digest
// ociArtifactDigest/v1. Other local blobs stay layers. It returns the
// rewritten components as pushed.
func (r *Registry) PushTransferred(t testing.TB, base string, comps ...*ocmbuild.Component) []Pushed {
	t.Helper()
	scheme := "http://"
	if r.server.TLS != nil {
		scheme = "https://"
	}
	var rewritten []*ocmbuild.Component
	for _, c := range comps {
		nc := *c
		nc.Resources = append([]ocmbuild.Resource(nil), c.Resources...)
		for i, res := range nc.Resources {
			if res.Data == nil || (res.MediaType != ocmbuild.MediaTypeArtifactSet && res.MediaType != "application/vnd.oci.image.manifest.v1+tar") {
				continue
			}
			name, tag, main, err := r.pushArtifactSet(t, path.Join(base, c.Name), res.Data)
			if err != nil {
				t.Fatalf("component %s:%s resource %s: %v", c.Name, c.Version, res.Name, err)
			}
			repo := path.Join(base, c.Name, name)
			res.Access = map[string]any{"type": ocm.AccessOCIArtifact, "imageReference": scheme + r.Host + "/" + repo + ":" + tag + "@" + main}
			res.Digest = &ocm.Digest{HashAlgorithm: "SHA-256", NormalisationAlgorithm: "ociArtifactDigest/v1", Value: strings.TrimPrefix(main, "sha256:")}
			if res.Relation == "" {
				res.Relation = "local"
			}
			if res.Version == "" {
				res.Version = c.Version
			}
			res.Data, res.MediaType, res.ReferenceName = nil, "", ""
			nc.Resources[i] = res
		}
		rewritten = append(rewritten, &nc)
	}
	return r.Push(t, base, rewritten...)
}

// pushArtifactSet pushes the main artifact of an OCM artifact set into
// <repoBase>/<chart name> and returns chart name, tag and manifest digest.
func (r *Registry) pushArtifactSet(t testing.TB, repoBase string, set []byte) (string, string, string, error) {
	files, err := ocmbuild.Untar(set)
	if err != nil {
		return "", "", "", err
	}
	var idx ocispec.Index
	if err := json.Unmarshal(files["index.json"], &idx); err != nil {
		return "", "", "", fmt.Errorf("artifact set index.json: %w", err)
	}
	if len(idx.Manifests) == 0 {
		return "", "", "", errors.New("artifact set has no manifests")
	}
	main := idx.Manifests[0]
	if m := idx.Annotations["software.ocm/main"]; m != "" {
		for _, d := range idx.Manifests {
			if d.Digest.String() == m {
				main = d
			}
		}
	}
	blobOf := func(d digest.Digest) ([]byte, error) {
		for _, n := range []string{"blobs/" + strings.Replace(d.String(), ":", ".", 1), "blobs/" + strings.Replace(d.String(), ":", "/", 1)} {
			if b, ok := files[n]; ok {
				if blob.Digest(b) != d.String() {
					return nil, fmt.Errorf("artifact set blob %s does not match its digest", d)
				}
				return b, nil
			}
		}
		return nil, fmt.Errorf("artifact set has no blob %s", d)
	}
	mb, err := blobOf(main.Digest)
	if err != nil {
		return "", "", "", err
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(mb, &m); err != nil {
		return "", "", "", fmt.Errorf("artifact set manifest: %w", err)
	}
	cfg, err := blobOf(m.Config.Digest)
	if err != nil {
		return "", "", "", err
	}
	var chart struct{ Name, Version string }
	_ = json.Unmarshal(cfg, &chart)
	if chart.Name == "" {
		return "", "", "", errors.New("artifact set is not a Helm chart (config has no name)")
	}
	tag := main.Annotations["org.opencontainers.image.ref.name"]
	if tag == "" {
		tag = strings.ReplaceAll(chart.Version, "+", "_")
	}
	repo := path.Join(repoBase, chart.Name)
	r.PushBlob(t, repo, cfg)
	for _, l := range m.Layers {
		b, err := blobOf(l.Digest)
		if err != nil {
			return "", "", "", err
		}
		r.PushBlob(t, repo, b)
	}
	mt := m.MediaType
	if mt == "" {
		mt = ocispec.MediaTypeImageManifest
	}
	r.PushManifest(t, repo, tag, mt, mb)
	return chart.Name, tag, main.Digest.String(), nil
}
