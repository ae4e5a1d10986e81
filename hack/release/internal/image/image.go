package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Paths inside the image.
const (
	BinDir        = "/usr/local/bin"
	PluginBinary  = BinDir + "/argocd-ocm-plugin"
	ClientBinary  = BinDir + "/argocd-ocm-client"
	Home          = "/home/argocd"
	PluginConfig  = Home + "/cmp-server/config/plugin.yaml"
	PluginSocket  = Home + "/cmp-server/plugins/argocd-ocm-plugin.sock"
	CABundle      = "/etc/ssl/certs/ca-certificates.crt"
	UID           = 999
	User          = "999:999"
	DefaultSource = "https://github.com/argocd-ocm-plugin/argocd-ocm-plugin"
)

// Entrypoint and Cmd: the render server answering the repo-server on Argo
// CD's plugin socket itself (manifests/install sets the same as the
// container's command). PluginConfig stays in the image for the alternative
// command, serve -- /var/run/argocd/argocd-cmp-server (docs/argocd.md).
var (
	Entrypoint = []string{PluginBinary}
	Cmd        = []string{"serve", "--plugin-socket", PluginSocket}
	Env        = []string{
		"PATH=" + BinDir + ":/usr/bin:/bin",
		"HOME=" + Home,
		"ARGOCD_OCM_CACHE_DIR=/tmp/argocd-ocm-plugin-cache",
	}
)

// Platform is one entry of the index: its platform and the two binaries
// built for it (paths on this machine).
type Platform struct {
	OS, Architecture, Variant string
	Plugin, Client            string
}

// String is os/arch[/variant].
func (p Platform) String() string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

// Spec is what the image is made of.
type Spec struct {
	Platforms []Platform
	// PluginConfig is the CMP config (manifests/install/plugin.yaml).
	PluginConfig string
	// CABundle is the PEM bundle copied to /etc/ssl/certs/ca-certificates.crt
	// (the builder's /etc/ssl/certs/ca-certificates.crt by default in the
	// command; see docs/release.md).
	CABundle string
	// Created is every timestamp in the image (SOURCE_DATE_EPOCH or the
	// commit time), in UTC.
	Created time.Time
	// Version and Revision (git commit) are stamped into the labels.
	Version, Revision string
	// Source is the repository URL (DefaultSource when empty).
	Source string
}

// Labels are the org.opencontainers.image.* labels of every image config, and
// the annotations of every manifest and of the index.
func (s Spec) Labels() map[string]string {
	src := s.Source
	if src == "" {
		src = DefaultSource
	}
	return map[string]string{
		"org.opencontainers.image.title":       "argocd-ocm-plugin",
		"org.opencontainers.image.description": "Argo CD config management plugin sidecar rendering OCM component versions",
		"org.opencontainers.image.source":      src,
		"org.opencontainers.image.url":         src,
		"org.opencontainers.image.version":     s.Version,
		"org.opencontainers.image.revision":    s.Revision,
		"org.opencontainers.image.created":     s.Created.UTC().Format(time.RFC3339),
		"org.opencontainers.image.licenses":    "Apache-2.0",
	}
}

// Build assembles the image index.
func Build(s Spec) (v1.ImageIndex, error) {
	if len(s.Platforms) == 0 {
		return nil, errors.New("image: no platforms")
	}
	if s.Version == "" || s.Revision == "" || s.Created.IsZero() {
		return nil, errors.New("image: version, revision and creation time are required")
	}
	created := s.Created.UTC().Truncate(time.Second)
	base, err := baseLayer(s, created)
	if err != nil {
		return nil, err
	}
	labels := s.Labels()
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var adds []mutate.IndexAddendum
	for _, p := range s.Platforms {
		img, err := platformImage(s, p, base, created, labels)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", p, err)
		}
		adds = append(adds, mutate.IndexAddendum{Add: imageDescriptor{img}, Descriptor: v1.Descriptor{
			Platform: &v1.Platform{OS: p.OS, Architecture: p.Architecture, Variant: p.Variant},
		}})
	}
	idx = mutate.AppendManifests(idx, adds...)
	return mutate.Annotations(idx, labels).(v1.ImageIndex), nil
}

// imageDescriptor describes an image in the index by media type, size and
// digest only: go-containerregistry would add the config media type as
// artifactType, which the OCI image spec reserves for artifacts.
type imageDescriptor struct{ v1.Image }

func (i imageDescriptor) Descriptor() (*v1.Descriptor, error) {
	mt, err := i.MediaType()
	if err != nil {
		return nil, err
	}
	size, err := i.Size()
	if err != nil {
		return nil, err
	}
	d, err := i.Digest()
	if err != nil {
		return nil, err
	}
	return &v1.Descriptor{MediaType: mt, Size: size, Digest: d}, nil
}

func platformImage(s Spec, p Platform, base v1.Layer, created time.Time, labels map[string]string) (v1.Image, error) {
	bins, err := binaryLayer(p, created)
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{Created: v1.Time{Time: created},
			CreatedBy: "argocd-ocm-plugin hack/release: passwd, group, CA certificates, /tmp, " + Home + ", " + PluginConfig}},
		mutate.Addendum{Layer: bins, History: v1.History{Created: v1.Time{Time: created},
			CreatedBy: "argocd-ocm-plugin hack/release: " + PluginBinary + ", " + ClientBinary + " (" + p.String() + ")"}},
	)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Created = v1.Time{Time: created}
	cf.Config = v1.Config{
		User:       User,
		Entrypoint: Entrypoint,
		Cmd:        Cmd,
		Env:        Env,
		WorkingDir: Home,
		Labels:     labels,
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, err
	}
	return mutate.Annotations(img, labels).(v1.Image), nil
}

// entry is one file or directory of a layer.
type entry struct {
	name string // absolute path in the image
	mode int64
	uid  int
	dir  bool
	data []byte
	src  string // file on this machine, read when data is nil
}

func baseLayer(s Spec, created time.Time) (v1.Layer, error) {
	cfg, err := os.ReadFile(s.PluginConfig)
	if err != nil {
		return nil, fmt.Errorf("plugin config: %w", err)
	}
	ca, err := os.ReadFile(s.CABundle)
	if err != nil {
		return nil, fmt.Errorf("CA bundle: %w", err)
	}
	return layer(created, []entry{
		{name: "/etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/sbin/nologin\nargocd:x:999:999:argocd:" + Home + ":/sbin/nologin\n")},
		{name: "/etc/group", mode: 0o644, data: []byte("root:x:0:\nargocd:x:999:\n")},
		{name: "/etc/nsswitch.conf", mode: 0o644, data: []byte("hosts: files dns\n")},
		{name: CABundle, mode: 0o644, data: ca},
		{name: "/tmp", mode: 0o1777, dir: true},
		{name: Home, mode: 0o755, uid: UID, dir: true},
		{name: Home + "/cmp-server", mode: 0o755, uid: UID, dir: true},
		{name: Home + "/cmp-server/config", mode: 0o755, uid: UID, dir: true},
		{name: Home + "/cmp-server/plugins", mode: 0o755, uid: UID, dir: true},
		{name: PluginConfig, mode: 0o644, data: cfg},
	})
}

func binaryLayer(p Platform, created time.Time) (v1.Layer, error) {
	return layer(created, []entry{
		{name: PluginBinary, mode: 0o755, src: p.Plugin},
		{name: ClientBinary, mode: 0o755, src: p.Client},
	})
}

// layer writes a tar of entries (parent directories added, root-owned 0755),
// sorted by path, every time the creation time, and gzips it.
func layer(created time.Time, entries []entry) (v1.Layer, error) {
	byName := map[string]entry{}
	for _, e := range entries {
		byName[e.name] = e
		for d := path.Dir(e.name); d != "/"; d = path.Dir(d) {
			if _, ok := byName[d]; !ok {
				byName[d] = entry{name: d, mode: 0o755, dir: true}
			}
		}
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		e := byName[n]
		h := &tar.Header{
			Name: n[1:], Mode: e.mode, Uid: e.uid, Gid: e.uid, ModTime: created,
			Format: tar.FormatPAX,
		}
		if e.uid == 0 {
			h.Uname, h.Gname = "root", "root"
		}
		if e.dir {
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
			if err := tw.WriteHeader(h); err != nil {
				return nil, err
			}
			continue
		}
		data := e.data
		if data == nil {
			b, err := os.ReadFile(e.src)
			if err != nil {
				return nil, err
			}
			data = b
		}
		h.Typeflag, h.Size = tar.TypeReg, int64(len(data))
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	tarBytes := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(tarBytes)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.BestCompression))
}

// RefName is the annotation naming an index in an OCI layout.
const RefName = "org.opencontainers.image.ref.name"

// WriteLayout writes idx as an OCI image layout in dir (replaced), with
// index.json pointing at the image index, named version.
func WriteLayout(dir string, idx v1.ImageIndex, version string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	return p.AppendIndex(idx, layout.WithAnnotations(map[string]string{RefName: version}))
}

// ReadLayout reads the image index WriteLayout wrote.
func ReadLayout(dir string) (v1.ImageIndex, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, err
	}
	top, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	m, err := top.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(m.Manifests) != 1 {
		return nil, fmt.Errorf("OCI layout %s: want one image index in index.json, found %d entries", dir, len(m.Manifests))
	}
	return top.ImageIndex(m.Manifests[0].Digest)
}

// Push writes idx to ref (host/repo:tag or host/repo) with the credentials of
// the docker config (DOCKER_CONFIG), no daemon. It returns the pushed
// reference by digest. Loopback registries are spoken to over plain HTTP.
func Push(ctx context.Context, idx v1.ImageIndex, ref string, opts ...remote.Option) (name.Digest, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return name.Digest{}, err
	}
	opts = append([]remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}, opts...)
	if err := remote.WriteIndex(r, idx, opts...); err != nil {
		return name.Digest{}, err
	}
	d, err := idx.Digest()
	if err != nil {
		return name.Digest{}, err
	}
	return r.Context().Digest(d.String()), nil
}
