package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/hack/release/internal/build"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/hack/release/internal/cosign"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/hack/release/internal/image"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/hack/release/internal/pin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/hack/release/internal/sbom"
)

// source is what every build is stamped with. Relative paths of the
// commands are relative to root.
type source struct {
	root, version, revision string
	created                 time.Time
}

func sourceFlags(fs *flag.FlagSet) func() (source, error) {
	root := fs.String("root", "../..", "the repository root (relative output paths are relative to it)")
	version := fs.String("version", "", "version to stamp (default: git describe --tags --always --dirty)")
	revision := fs.String("revision", "", "git commit to stamp (default: git rev-parse HEAD)")
	return func() (source, error) {
		s := source{version: *version, revision: *revision}
		r, err := filepath.Abs(*root)
		if err != nil {
			return s, err
		}
		s.root = r
		if s.version == "" {
			s.version = strings.TrimSpace(git(r, "describe", "--tags", "--always", "--dirty"))
		}
		if s.version == "" {
			return s, errors.New("no -version and no git history to describe")
		}
		if s.revision == "" {
			s.revision = strings.TrimSpace(git(r, "rev-parse", "HEAD"))
		}
		if s.revision == "" {
			return s, errors.New("no -revision and no git history")
		}
		// Reproducible builds: SOURCE_DATE_EPOCH, else the commit time.
		epoch := os.Getenv("SOURCE_DATE_EPOCH")
		if epoch == "" {
			epoch = strings.TrimSpace(git(r, "log", "-1", "--format=%ct", s.revision))
		}
		sec, err := strconv.ParseInt(epoch, 10, 64)
		if err != nil {
			return s, fmt.Errorf("creation time: SOURCE_DATE_EPOCH %q: %v", epoch, err)
		}
		s.created = time.Unix(sec, 0).UTC()
		return s, nil
	}
}

func git(dir string, args ...string) string {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return string(out)
}

func (s source) path(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(s.root, p)
}

type imageFlags struct {
	platforms, caBundle, pluginConfig *string
}

func addImageFlags(fs *flag.FlagSet) imageFlags {
	return imageFlags{
		platforms:    fs.String("platforms", "linux/amd64,linux/arm64", "image platforms"),
		caBundle:     fs.String("ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "PEM CA bundle copied into the image"),
		pluginConfig: fs.String("plugin-config", "manifests/install/plugin.yaml", "CMP config copied to "+image.PluginConfig),
	}
}

// buildImage builds the binaries of each image platform into binDir (or uses
// have, binaries already built by platform) and assembles the index.
func buildImage(ctx context.Context, s source, f imageFlags, binDir string, have map[string]map[string]string) (image.Spec, error) {
	targets, err := build.ParseTargets(*f.platforms)
	if err != nil {
		return image.Spec{}, err
	}
	spec := image.Spec{
		PluginConfig: s.path(*f.pluginConfig), CABundle: *f.caBundle,
		Created: s.created, Version: s.version, Revision: s.revision,
	}
	for _, t := range targets {
		bins := have[t.String()]
		if bins == nil {
			fmt.Fprintf(os.Stderr, "building %s binaries (%s)\n", t, s.version)
			bins, err = build.Binaries(ctx, build.Options{Root: s.root, Version: s.version}, t, filepath.Join(binDir, t.OS+"-"+t.Arch))
			if err != nil {
				return spec, err
			}
		}
		spec.Platforms = append(spec.Platforms, image.Platform{OS: t.OS, Architecture: t.Arch,
			Plugin: bins["argocd-ocm-plugin"], Client: bins["argocd-ocm-client"]})
	}
	return spec, nil
}

func cmdImage(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	src := sourceFlags(fs)
	imf := addImageFlags(fs)
	out := fs.String("out", "bin/image", "OCI layout directory (replaced)")
	binDir := fs.String("bin-dir", "bin/image-binaries", "where the image's binaries are built")
	push := fs.String("push", "", "push to this reference (host/repo[:tag]; the tag defaults to the version)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	s, err := src()
	if err != nil {
		return err
	}
	spec, err := buildImage(ctx, s, imf, s.path(*binDir), nil)
	if err != nil {
		return err
	}
	ref, err := writeImage(ctx, spec, s.path(*out), *push)
	if err != nil {
		return err
	}
	fmt.Println(ref)
	return nil
}

// writeImage builds, writes the layout and pushes when pushTo is set; it
// returns the image by digest (pushTo's repository, or pin.Image).
func writeImage(ctx context.Context, spec image.Spec, layoutDir, pushTo string) (string, error) {
	idx, err := image.Build(spec)
	if err != nil {
		return "", err
	}
	if err := image.WriteLayout(layoutDir, idx, spec.Version); err != nil {
		return "", err
	}
	d, err := idx.Digest()
	if err != nil {
		return "", err
	}
	fmt.Fprintf(os.Stderr, "image %s: OCI layout %s\n", d, layoutDir)
	if pushTo == "" {
		return pin.Image + "@" + d.String(), nil
	}
	ref, err := pushRef(pushTo, spec.Version)
	if err != nil {
		return "", err
	}
	pushed, err := image.Push(ctx, idx, ref)
	if err != nil {
		return "", fmt.Errorf("push %s: %w", ref, err)
	}
	fmt.Fprintf(os.Stderr, "pushed %s\n", ref)
	return pushed.String(), nil
}

// pushRef adds the version as tag to a reference without tag or digest.
func pushRef(ref, version string) (string, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return "", err
	}
	if t, ok := r.(name.Tag); ok && !strings.HasSuffix(ref, ":"+t.TagStr()) {
		return r.Context().Tag(strings.ReplaceAll(version, "+", "_")).String(), nil
	}
	return r.String(), nil
}

func cmdPush(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("push", flag.ContinueOnError)
	layoutDir := fs.String("layout", "bin/image", "OCI layout written by image or dist")
	ref := fs.String("ref", "", "host/repo:tag")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *ref == "" {
		return errors.New("push: -ref is required")
	}
	idx, err := image.ReadLayout(*layoutDir)
	if err != nil {
		return err
	}
	d, err := image.Push(ctx, idx, *ref)
	if err != nil {
		return err
	}
	fmt.Println(d)
	return nil
}

func cmdDist(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("dist", flag.ContinueOnError)
	src := sourceFlags(fs)
	imf := addImageFlags(fs)
	out := fs.String("out", "dist", "output directory (replaced)")
	targets := fs.String("targets", "linux/amd64,linux/arm64,darwin/amd64,darwin/arm64", "binary platforms")
	push := fs.String("push", "", "push the image to this repository (host/repo, tagged with the version) and pin the manifests to it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	s, err := src()
	if err != nil {
		return err
	}
	dist := s.path(*out)
	if err := os.RemoveAll(dist); err != nil {
		return err
	}
	ts, err := build.ParseTargets(*targets)
	if err != nil {
		return err
	}
	built, bins, err := buildBinaries(ctx, s, ts, dist)
	if err != nil {
		return err
	}
	if err := checkVersion(dist, s.version); err != nil {
		return err
	}

	if err := writeSBOM(s, bins, dist); err != nil {
		return err
	}

	spec, err := buildImage(ctx, s, imf, filepath.Join(dist, ".build"), built)
	if err != nil {
		return err
	}
	ref, err := writeImage(ctx, spec, filepath.Join(dist, "image"), *push)
	if err != nil {
		return err
	}
	if err := pinManifests(s, dist, ref, *push != ""); err != nil {
		return err
	}
	if err := os.RemoveAll(filepath.Join(dist, ".build")); err != nil {
		return err
	}
	if err := writeChecksums(dist); err != nil {
		return err
	}
	fmt.Println(ref)
	return nil
}

// buildBinaries builds the binaries for each target and copies them into
// dist as release assets; it returns the built paths by platform and binary
// name (for the image) and the assets (for the SBOM).
func buildBinaries(ctx context.Context, s source, ts []build.Target, dist string) (map[string]map[string]string, []sbom.Binary, error) {
	built := map[string]map[string]string{}
	var bins []sbom.Binary
	for _, t := range ts {
		fmt.Fprintf(os.Stderr, "building %s binaries (%s)\n", t, s.version)
		tmp := filepath.Join(dist, ".build", t.OS+"-"+t.Arch)
		paths, err := build.Binaries(ctx, build.Options{Root: s.root, Version: s.version}, t, tmp)
		if err != nil {
			return nil, nil, err
		}
		built[t.String()] = paths
		for _, n := range sortedKeys(paths) {
			asset := filepath.Join(dist, n+"-"+t.OS+"-"+t.Arch)
			if err := copyFile(paths[n], asset, 0o755); err != nil {
				return nil, nil, err
			}
			bins = append(bins, sbom.Binary{Name: n, Platform: t.String(), Path: asset})
		}
	}
	return built, bins, nil
}

// writeSBOM writes the SPDX document of bins into dist.
func writeSBOM(s source, bins []sbom.Binary, dist string) error {
	doc, err := sbom.Generate(s.version, s.created, bins)
	if err != nil {
		return err
	}
	var sb bytes.Buffer
	if err := sbom.Write(&sb, doc); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dist, "argocd-ocm-plugin.spdx.json"), sb.Bytes(), 0o644); err != nil {
		return err
	}
	return nil
}

// pinManifests writes the image reference to dist/IMAGE and copies the
// manifests into dist, pinned to the image's digest (and to its repository
// when it was pushed).
func pinManifests(s source, dist, ref string, pushed bool) error {
	digested, err := name.NewDigest(ref)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dist, "IMAGE"), []byte(ref+"\n"), 0o644); err != nil {
		return err
	}
	repo := ""
	if pushed {
		repo = digested.Context().Name()
	}
	changed, err := pin.Manifests(s.path("manifests"), filepath.Join(dist, "manifests"), repo, digested.DigestStr())
	if err != nil {
		return err
	}
	if len(changed) == 0 {
		return errors.New("pin: no manifest references the image")
	}
	fmt.Fprintf(os.Stderr, "manifests pinned to %s: %s\n", ref, strings.Join(changed, ", "))
	return nil
}

// checkVersion runs this machine's binary, if one was built, and checks that
// it prints the stamped version.
func checkVersion(dist, version string) error {
	p := filepath.Join(dist, "argocd-ocm-plugin-"+runtime.GOOS+"-"+runtime.GOARCH)
	if _, err := os.Stat(p); err != nil {
		return nil
	}
	out, err := exec.Command(p, "version").Output()
	if err != nil {
		return fmt.Errorf("%s version: %w", p, err)
	}
	if want := "argocd-ocm-plugin " + version + "\n"; string(out) != want {
		return fmt.Errorf("%s version printed %q, want %q", p, out, want)
	}
	return nil
}

// writeChecksums writes SHA256SUMS (sha256sum -c format) of every file in
// dist except the OCI layout, whose blobs are content-addressed already.
func writeChecksums(dist string) error {
	var lines []string
	err := filepath.WalkDir(dist, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dist, p)
		if d.IsDir() {
			if rel == "image" {
				return filepath.SkipDir
			}
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		h := sha256.Sum256(b)
		lines = append(lines, hex.EncodeToString(h[:])+"  "+filepath.ToSlash(rel)+"\n")
		return nil
	})
	if err != nil {
		return err
	}
	sort.Slice(lines, func(i, j int) bool { return lines[i][66:] < lines[j][66:] })
	return os.WriteFile(filepath.Join(dist, "SHA256SUMS"), []byte(strings.Join(lines, "")), 0o644)
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// cmdPin copies manifests/ with every reference to the sidecar image
// pinned to one image by digest (make manifests IMAGE=repo@sha256:…): the
// install of an image you built and pushed yourself.
func cmdPin(args []string) error {
	fs := flag.NewFlagSet("pin", flag.ContinueOnError)
	root := fs.String("root", "../..", "the repository root (relative output paths are relative to it)")
	img := fs.String("image", "", "the image by digest: host/repo@sha256:<64 hex> (what make image prints)")
	out := fs.String("out", "bin/manifests", "output directory (replaced)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	digested, err := name.NewDigest(*img, name.StrictValidation)
	if err != nil || !strings.HasPrefix(digested.DigestStr(), "sha256:") {
		return fmt.Errorf("pin: -image %q: want host/repo@sha256:<digest>, the image by digest that make image prints (a tag can move; the manifests pin the digest)", *img)
	}
	r, err := filepath.Abs(*root)
	if err != nil {
		return err
	}
	dst := *out
	if !filepath.IsAbs(dst) {
		dst = filepath.Join(r, dst)
	}
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	changed, err := pin.Manifests(filepath.Join(r, "manifests"), dst, digested.Context().Name(), digested.DigestStr())
	if err != nil {
		return err
	}
	if len(changed) == 0 {
		return errors.New("pin: no manifest references the image")
	}
	fmt.Fprintf(os.Stderr, "manifests pinned to %s in %s: %s\n", *img, dst, strings.Join(changed, ", "))
	return nil
}

func cmdKeygen(args []string) error {
	fs := flag.NewFlagSet("keygen", flag.ContinueOnError)
	out := fs.String("out", "", "write PREFIX.key (PKCS#8, unencrypted) and PREFIX.pub")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return errors.New("keygen: -out is required")
	}
	priv, pub, err := cosign.GenerateKey()
	if err != nil {
		return err
	}
	if err := os.WriteFile(*out+".key", priv, 0o600); err != nil {
		return err
	}
	return os.WriteFile(*out+".pub", pub, 0o644)
}

func digestFlag(ref string) (name.Digest, error) {
	if ref == "" {
		return name.Digest{}, errors.New("-image host/repo@sha256:… is required")
	}
	d, err := name.NewDigest(ref)
	if err != nil {
		return name.Digest{}, fmt.Errorf("-image %q: sign and verify take an image by digest (host/repo@sha256:…): %v", ref, err)
	}
	return d, nil
}

// keyAndImage parses the flags sign and verify share: a key file (keyHelp
// says which kind) and an image by digest.
func keyAndImage(cmd, keyHelp string, args []string) (name.Digest, []byte, error) {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	keyFile := fs.String("key", "", keyHelp)
	ref := fs.String("image", "", "image by digest")
	if err := fs.Parse(args); err != nil {
		return name.Digest{}, nil, err
	}
	d, err := digestFlag(*ref)
	if err != nil {
		return name.Digest{}, nil, err
	}
	b, err := os.ReadFile(*keyFile)
	if err != nil {
		return name.Digest{}, nil, err
	}
	return d, b, nil
}

func cmdSign(ctx context.Context, args []string) error {
	d, b, err := keyAndImage("sign", "PEM ECDSA P-256 private key (PKCS#8 or SEC 1, unencrypted)", args)
	if err != nil {
		return err
	}
	k, err := cosign.ParsePrivateKey(b)
	if err != nil {
		return err
	}
	tag, err := cosign.Sign(ctx, d, k)
	if err != nil {
		return err
	}
	fmt.Println(tag)
	return nil
}

func cmdVerify(ctx context.Context, args []string) error {
	d, b, err := keyAndImage("verify", "PEM public key (cosign.pub)", args)
	if err != nil {
		return err
	}
	k, err := cosign.ParsePublicKey(b)
	if err != nil {
		return err
	}
	vs, err := cosign.Verify(ctx, d, k)
	if err != nil {
		return err
	}
	for _, v := range vs {
		fmt.Printf("verified %s: signed %s (docker-reference %s)\n", d, v.Payload.Critical.Image.DockerManifestDigest, v.Payload.Critical.Identity.DockerReference)
	}
	return nil
}
