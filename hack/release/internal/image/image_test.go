package image_test

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/hack/release/internal/build"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/hack/release/internal/image"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
)

const testVersion = "v9.8.7-test"

var root = filepath.Join("..", "..", "..", "..")

var (
	binOnce sync.Once
	binDir  string
	bins    map[string]string
	binErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// amd64Binaries builds the real linux/amd64 binaries once per test run. Only
// this platform is compiled: the compile flags are `make build`'s, so the
// packages come from the build cache and this costs two links. The arm64
// entry of the test index gets stand-in files (its layout is the same code
// path; `make image` builds it for real).
func amd64Binaries(t *testing.T) map[string]string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "argocd-ocm-image-test-")
		if binErr != nil {
			return
		}
		bins, binErr = build.Binaries(context.Background(), build.Options{Root: root, Version: testVersion},
			build.Target{OS: "linux", Arch: "amd64"}, binDir)
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return bins
}

func spec(t *testing.T) image.Spec {
	t.Helper()
	real := amd64Binaries(t)
	dir := t.TempDir()
	stub := func(n string) string {
		p := filepath.Join(dir, n)
		if err := os.WriteFile(p, []byte("stand-in "+n+" for linux/arm64\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\ntest bundle\n-----END CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return image.Spec{
		Platforms: []image.Platform{
			{OS: "linux", Architecture: "amd64", Plugin: real["argocd-ocm-plugin"], Client: real["argocd-ocm-client"]},
			{OS: "linux", Architecture: "arm64", Plugin: stub("argocd-ocm-plugin"), Client: stub("argocd-ocm-client")},
		},
		PluginConfig: filepath.Join(root, "manifests", "install", "plugin.yaml"),
		CABundle:     ca,
		Created:      time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC),
		Version:      testVersion,
		Revision:     "0123456789abcdef0123456789abcdef01234567",
	}
}

// TestImageRoundTrip pushes the image to a real distribution registry on
// loopback, pulls it back and checks the index, the config of each platform,
// the files of the layers, and that the amd64 binary from the pulled image
// prints the stamped version.
func TestImageRoundTrip(t *testing.T) {
	s := spec(t)
	idx, err := image.Build(s)
	if err != nil {
		t.Fatal(err)
	}
	layoutDir := filepath.Join(t.TempDir(), "layout")
	if err := image.WriteLayout(layoutDir, idx, s.Version); err != nil {
		t.Fatal(err)
	}
	fromLayout, err := image.ReadLayout(layoutDir)
	if err != nil {
		t.Fatal(err)
	}
	reg := registrytest.Start(t)
	pushed, err := image.Push(context.Background(), fromLayout, reg.Host+"/argocd-ocm-plugin/sidecar:"+testVersion)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := idx.Digest()
	if pushed.DigestStr() != want.String() {
		t.Fatalf("pushed %s, built %s", pushed, want)
	}

	tag, _ := name.NewTag(reg.Host + "/argocd-ocm-plugin/sidecar:" + testVersion)
	pulled, err := remote.Index(tag)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := pulled.Digest(); d != want {
		t.Fatalf("tag resolves to %s, want %s", d, want)
	}
	im, err := pulled.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if im.MediaType != types.OCIImageIndex {
		t.Errorf("index media type %s", im.MediaType)
	}
	labels := s.Labels()
	for _, k := range []string{"source", "version", "revision", "created"} {
		if im.Annotations["org.opencontainers.image."+k] == "" {
			t.Errorf("index lacks annotation org.opencontainers.image.%s: %v", k, im.Annotations)
		}
	}
	if !reflect.DeepEqual(im.Annotations, labels) {
		t.Errorf("index annotations %v, want %v", im.Annotations, labels)
	}
	if labels["org.opencontainers.image.created"] != "2026-11-30T12:00:00Z" || labels["org.opencontainers.image.version"] != testVersion {
		t.Errorf("labels %v", labels)
	}
	var platforms []string
	for _, m := range im.Manifests {
		platforms = append(platforms, m.Platform.OS+"/"+m.Platform.Architecture)
		if m.MediaType != types.OCIManifestSchema1 || m.ArtifactType != "" {
			t.Errorf("%s: manifest media type %s, artifact type %q", m.Platform, m.MediaType, m.ArtifactType)
		}
	}
	if !slices.Equal(platforms, []string{"linux/amd64", "linux/arm64"}) {
		t.Fatalf("platforms %v", platforms)
	}

	pluginYAML, err := os.ReadFile(s.PluginConfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range im.Manifests {
		img, err := pulled.Image(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		arch := m.Platform.Architecture
		if cf.OS != "linux" || cf.Architecture != arch {
			t.Errorf("%s: config platform %s/%s", arch, cf.OS, cf.Architecture)
		}
		c := cf.Config
		if c.User != "999:999" {
			t.Errorf("%s: user %q", arch, c.User)
		}
		if !slices.Equal(c.Entrypoint, []string{"/usr/local/bin/argocd-ocm-plugin"}) || !slices.Equal(c.Cmd, []string{"serve", "--plugin-socket", "/home/argocd/cmp-server/plugins/argocd-ocm-plugin.sock"}) {
			t.Errorf("%s: entrypoint %q cmd %q", arch, c.Entrypoint, c.Cmd)
		}
		for _, e := range []string{"HOME=/home/argocd", "PATH=/usr/local/bin:/usr/bin:/bin", "ARGOCD_OCM_CACHE_DIR=/tmp/argocd-ocm-plugin-cache"} {
			if !slices.Contains(c.Env, e) {
				t.Errorf("%s: env %q lacks %s", arch, c.Env, e)
			}
		}
		if !reflect.DeepEqual(c.Labels, labels) {
			t.Errorf("%s: labels %v", arch, c.Labels)
		}
		if !cf.Created.Time.Equal(s.Created) {
			t.Errorf("%s: created %v", arch, cf.Created)
		}
		mf, _ := img.Manifest()
		if len(mf.Layers) != 2 || mf.Layers[0].MediaType != types.OCILayer {
			t.Fatalf("%s: layers %+v", arch, mf.Layers)
		}
		files := readFiles(t, img)
		checkFile(t, files, "etc/passwd", 0o644, 0, "argocd:x:999:999:argocd:/home/argocd:")
		checkFile(t, files, "etc/group", 0o644, 0, "argocd:x:999:")
		checkFile(t, files, "etc/ssl/certs/ca-certificates.crt", 0o644, 0, "test bundle")
		checkFile(t, files, "home/argocd/cmp-server/config/plugin.yaml", 0o644, 0, string(pluginYAML))
		checkDir(t, files, "tmp/", 0o1777, 0)
		checkDir(t, files, "home/argocd/", 0o755, 999)
		checkDir(t, files, "home/argocd/cmp-server/plugins/", 0o755, 999)
		for _, b := range []string{"usr/local/bin/argocd-ocm-plugin", "usr/local/bin/argocd-ocm-client"} {
			checkFile(t, files, b, 0o755, 0, "")
		}
		for n, f := range files {
			if !f.hdr.ModTime.Equal(s.Created) {
				t.Errorf("%s: %s mtime %v", arch, n, f.hdr.ModTime)
			}
		}
		if arch == "amd64" {
			runVersion(t, files["usr/local/bin/argocd-ocm-plugin"].data)
		}
	}
}

func runVersion(t *testing.T, bin []byte) {
	t.Helper()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Logf("SKIP running the linux/amd64 binary on %s/%s", runtime.GOOS, runtime.GOARCH)
		return
	}
	p := filepath.Join(t.TempDir(), "argocd-ocm-plugin")
	if err := os.WriteFile(p, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(p, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("version: %v\n%s", err, out)
	}
	if string(out) != "argocd-ocm-plugin "+testVersion+"\n" {
		t.Fatalf("version printed %q", out)
	}
}

type file struct {
	hdr  *tar.Header
	data []byte
}

func readFiles(t *testing.T, img v1.Image) map[string]file {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]file{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if _, dup := files[h.Name]; dup {
				t.Errorf("%s in two layers", h.Name)
			}
			files[h.Name] = file{h, b}
		}
		rc.Close()
	}
	return files
}

func checkFile(t *testing.T, files map[string]file, n string, mode int64, uid int, contains string) {
	t.Helper()
	f, ok := files[n]
	if !ok {
		t.Errorf("no %s in the image", n)
		return
	}
	if f.hdr.Typeflag != tar.TypeReg || f.hdr.Mode != mode || f.hdr.Uid != uid || f.hdr.Gid != uid {
		t.Errorf("%s: type %c mode %o uid %d gid %d", n, f.hdr.Typeflag, f.hdr.Mode, f.hdr.Uid, f.hdr.Gid)
	}
	if !strings.Contains(string(f.data), contains) {
		t.Errorf("%s lacks %q:\n%s", n, contains, f.data)
	}
}

func checkDir(t *testing.T, files map[string]file, n string, mode int64, uid int) {
	t.Helper()
	f, ok := files[n]
	if !ok {
		t.Errorf("no directory %s in the image", n)
		return
	}
	if f.hdr.Typeflag != tar.TypeDir || f.hdr.Mode != mode || f.hdr.Uid != uid {
		t.Errorf("%s: type %c mode %o uid %d", n, f.hdr.Typeflag, f.hdr.Mode, f.hdr.Uid)
	}
}

// TestReproducible: two builds from the same inputs give the same index
// digest and byte-identical OCI layouts; another creation time does not.
func TestReproducible(t *testing.T) {
	s := spec(t)
	var digests []v1.Hash
	var layouts []string
	for range 2 {
		idx, err := image.Build(s)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := idx.Digest()
		digests = append(digests, d)
		dir := filepath.Join(t.TempDir(), "layout")
		if err := image.WriteLayout(dir, idx, s.Version); err != nil {
			t.Fatal(err)
		}
		layouts = append(layouts, dir)
	}
	if digests[0] != digests[1] {
		t.Fatalf("two builds: %s and %s", digests[0], digests[1])
	}
	a, b := tree(t, layouts[0]), tree(t, layouts[1])
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("layouts differ:\n%v\n%v", a, b)
	}
	if _, ok := a["index.json"]; !ok || len(a) < 8 {
		t.Fatalf("layout %v", a)
	}

	s.Created = s.Created.Add(time.Second)
	idx, err := image.Build(s)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := idx.Digest(); d == digests[0] {
		t.Fatal("another creation time gave the same digest")
	}
}

func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		m[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestBuildRefusesIncompleteSpec(t *testing.T) {
	for _, s := range []image.Spec{{}, {Platforms: []image.Platform{{OS: "linux", Architecture: "amd64"}}}} {
		if _, err := image.Build(s); err == nil {
			t.Errorf("Build(%+v) accepted", s)
		}
	}
}

// TestCommandMatchesInstallManifest: the image's entrypoint and default
// command are the command manifests/install gives the sidecar container, so
// the image does the same with and without it.
func TestCommandMatchesInstallManifest(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "manifests", "install", "repo-server-sidecar.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := "command: [" + strings.Join(append(slices.Clone(image.Entrypoint), image.Cmd...), ", ") + "]"
	if !strings.Contains(string(b), want) {
		t.Errorf("manifests/install/repo-server-sidecar.yaml has no %q", want)
	}
	// The socket is in the directory the install mounts from the
	// repo-server's plugins volume.
	if dir := filepath.Dir(image.PluginSocket); !strings.Contains(string(b), "mountPath: "+dir+"\n") {
		t.Errorf("the install manifest mounts no volume at %s, where the image's command puts the plugin socket", dir)
	}
}
