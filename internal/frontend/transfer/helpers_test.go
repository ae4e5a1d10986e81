package transfer_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/transfer"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/ctf"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/registry"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/fixtures"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
)

// ociView is an OCI store seen from outside: repository → tag → manifest
// digest, and digest → content.
type ociView struct {
	tags  map[string]map[string]string
	blobs map[string][]byte
}

// readStorage reads a distribution registry's filesystem storage (the OCM
// CLI fixture's) without serving it.
func readStorage(t *testing.T, root string) *ociView {
	t.Helper()
	v := &ociView{tags: map[string]map[string]string{}, blobs: map[string][]byte{}}
	base := filepath.Join(root, "docker", "registry", "v2")
	repos := filepath.Join(base, "repositories")
	err := filepath.WalkDir(repos, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() || d.Name() != "tags" || filepath.Base(filepath.Dir(p)) != "_manifests" {
			return err
		}
		repo, _ := filepath.Rel(repos, filepath.Dir(filepath.Dir(p)))
		entries, err := os.ReadDir(p)
		if err != nil {
			return err
		}
		v.tags[filepath.ToSlash(repo)] = map[string]string{}
		for _, e := range entries {
			link, err := os.ReadFile(filepath.Join(p, e.Name(), "current", "link"))
			if err != nil {
				return err
			}
			v.tags[filepath.ToSlash(repo)][e.Name()] = strings.TrimSpace(string(link))
		}
		return filepath.SkipDir
	})
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(filepath.Join(base, "blobs"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "data" {
			return err
		}
		b, err := os.ReadFile(p)
		v.blobs["sha256:"+filepath.Base(filepath.Dir(p))] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// readRegistry reads every repository, tag and the content of every
// manifest (recursively) of a running registry.
func readRegistry(t *testing.T, reg *registrytest.Registry) *ociView {
	t.Helper()
	ctx := context.Background()
	v := &ociView{tags: map[string]map[string]string{}, blobs: map[string][]byte{}}
	r, err := remote.NewRegistry(reg.Host)
	if err != nil {
		t.Fatal(err)
	}
	r.PlainHTTP = true
	r.Client = reg.Repository(t, "x").Client
	var repos []string
	if err := r.Repositories(ctx, "", func(page []string) error { repos = append(repos, page...); return nil }); err != nil {
		t.Fatal(err)
	}
	for _, name := range repos {
		repo := reg.Repository(t, name)
		v.tags[name] = map[string]string{}
		var tags []string
		if err := repo.Tags(ctx, "", func(page []string) error { tags = append(tags, page...); return nil }); err != nil {
			t.Fatal(err)
		}
		var fetch func(d ocispec.Descriptor)
		fetch = func(d ocispec.Descriptor) {
			if _, ok := v.blobs[d.Digest.String()]; ok {
				return
			}
			rc, err := repo.Fetch(ctx, d)
			if err != nil {
				t.Fatalf("%s: fetch %s: %v", name, d.Digest, err)
			}
			b, _ := io.ReadAll(rc)
			rc.Close()
			v.blobs[d.Digest.String()] = b
			var m ocispec.Manifest
			if d.MediaType == ocispec.MediaTypeImageManifest && json.Unmarshal(b, &m) == nil {
				fetch(m.Config)
				for _, l := range m.Layers {
					fetch(l)
				}
			}
		}
		for _, tag := range tags {
			d, err := repo.Resolve(ctx, tag)
			if err != nil {
				t.Fatal(err)
			}
			v.tags[name][tag] = d.Digest.String()
			fetch(d)
		}
	}
	return v
}

// readCTF reads a CTF directory's index and blobs.
func readCTF(t *testing.T, dir string) *ociView {
	t.Helper()
	v := &ociView{tags: map[string]map[string]string{}, blobs: map[string][]byte{}}
	b, err := os.ReadFile(filepath.Join(dir, ctf.IndexFileName))
	if err != nil {
		t.Fatal(err)
	}
	var idx ctf.Index
	if err := json.Unmarshal(b, &idx); err != nil {
		t.Fatal(err)
	}
	for _, a := range idx.Artifacts {
		if a.Tag == "" {
			continue
		}
		if v.tags[a.Repository] == nil {
			v.tags[a.Repository] = map[string]string{}
		}
		v.tags[a.Repository][a.Tag] = a.Digest
	}
	entries, err := os.ReadDir(filepath.Join(dir, ctf.BlobsDir))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, ctf.BlobsDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		v.blobs[strings.Replace(e.Name(), ".", ":", 1)] = b
	}
	return v
}

func (v *ociView) manifest(t *testing.T, repo, tag string) ocispec.Manifest {
	t.Helper()
	d, ok := v.tags[repo][tag]
	if !ok {
		t.Fatalf("no tag %s:%s", repo, tag)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(v.blobs[d], &m); err != nil {
		t.Fatalf("%s:%s: %v", repo, tag, err)
	}
	return m
}

// descriptor is the component-descriptor.yaml of a version's manifest.
func (v *ociView) descriptor(t *testing.T, repo, tag string) []byte {
	t.Helper()
	m := v.manifest(t, repo, tag)
	raw := v.blobs[m.Layers[0].Digest.String()]
	doc, err := untarOne(raw)
	if err != nil {
		t.Fatalf("%s:%s: descriptor layer: %v", repo, tag, err)
	}
	return doc
}

func (v *ociView) repositories() []string {
	var out []string
	for r := range v.tags {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// ctfVersions lists a CTF's component versions (name, version).
func ctfVersions(t *testing.T, dir string) [][2]string {
	t.Helper()
	v := readCTF(t, dir)
	var out [][2]string
	for repo, tags := range v.tags {
		for tag := range tags {
			out = append(out, [2]string{strings.TrimPrefix(repo, "component-descriptors/"), strings.ReplaceAll(tag, ".build-", "+")})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0]+out[i][1] < out[j][0]+out[j][1] })
	return out
}

func fixtureDir(t *testing.T, name string) string { return filepath.Join(fixtures.Dir(t), name) }

// clientOptions configure a registry client for tests: no Docker config,
// no environment.
func clientOptions(opts ...registry.Option) []registry.Option {
	return append([]registry.Option{registry.WithoutDockerConfig(), registry.WithEnv(func(string) (string, bool) { return "", false })}, opts...)
}

func run(t *testing.T, tr *transfer.Transfer) (*transfer.Summary, string) {
	t.Helper()
	var log bytes.Buffer
	tr.Progress = &log
	if tr.Registry == nil && tr.RegistryOptions == nil {
		tr.RegistryOptions = clientOptions()
	}
	tr.TempDir = t.TempDir()
	s, err := tr.Run(context.Background())
	if err != nil {
		t.Fatalf("transfer %s:%s %s -> %s: %v\n%s", tr.Component, tr.Version, tr.From, tr.To, err, log.String())
	}
	return s, log.String()
}

// extractTgz unpacks a CTF tgz written by a transfer (regular files only).
func extractTgz(src, dir string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if h.Typeflag != tar.TypeReg || strings.Contains(h.Name, "..") {
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err
		}
	}
}
