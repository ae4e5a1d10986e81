package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests/manifeststest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/fixtures"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
)

// A version the OCM CLI v0.13 wrote (its tag names an image index whose
// other entry is the Helm chart as an OCI manifest) stays in that format
// through transfer CTF → CTF, CTF → registry, registry → CTF: the copy's tag
// names an index with the chart entry and its annotations, the signature
// fx-pss verifies and the chart renders what helm does. With
// --copy-resources the chart's manifest and layers become an artifact of
// their own. (Transfer failed before: the chart is no layer of the
// descriptor manifest.)
func TestTransferOCMCLIv2IndexVersion(t *testing.T) {
	src := mustAbs(fixtures.V2Path(t, "ctf"))
	key := mustAbs(fixtures.V2Path(t, "keys", "rsa.pub.pem"))
	const comp, version = v2Prefix + "helm-dir", "1.0.0"
	reg := registrytest.Start(t)
	dir := t.TempDir()
	do := func(t *testing.T, args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr, env(nil)); code != 0 {
			t.Fatalf("%s: exit %d: %s", args[0], code, stderr.String())
		}
		return stdout.String() + stderr.String()
	}
	check := func(t *testing.T, repo string) {
		t.Helper()
		out := do(t, "verify", "--repository", repo, "--component", comp, "--version", version, "--signature", "fx-pss", "--public-key", key)
		for _, w := range []string{"verified " + comp + ":" + version + " signature fx-pss (RSASSA-PSS, jsonNormalisation/v4alpha1 SHA-256 571b4e19", "chart: checked"} {
			if !strings.Contains(out, w) {
				t.Errorf("verify %s lacks %q:\n%s", repo, w, out)
			}
		}
		var stdout, stderr bytes.Buffer
		if code := run([]string{"render", "--repository", repo, "--component", comp, "--version", version, "--kube-version", "1.31.0",
			"--release-name", "podinfo", "--namespace", "fx-apps"}, &stdout, &stderr, env(nil)); code != 0 {
			t.Fatalf("render %s: exit %d: %s", repo, code, stderr.String())
		}
		manifeststest.Equal(t, decodeOut(t, stdout.Bytes()), v2Golden(t, "podinfo-default.yaml"))
	}
	transfer := func(t *testing.T, from, to string, extra ...string) string {
		t.Helper()
		return do(t, append([]string{"transfer", "--from", from, "--to", to, "--component", comp, "--version", version}, extra...)...)
	}
	registryIndex := func(t *testing.T, prefix string) ocispec.Index {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, reg.URL+"/v2/"+prefix+"/component-descriptors/"+comp+"/manifests/"+version, nil)
		req.Header.Set("Accept", ocispec.MediaTypeImageIndex+", "+ocispec.MediaTypeImageManifest)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var idx ocispec.Index
		if err := json.Unmarshal(b, &idx); err != nil || idx.MediaType != ocispec.MediaTypeImageIndex {
			t.Fatalf("%s: the tag names no index (%v): %s", prefix, err, b)
		}
		return idx
	}

	t.Run("CTF to CTF, byte for byte", func(t *testing.T) {
		out := filepath.Join(dir, "copy")
		transfer(t, src, out)
		idx, d := ctfIndexOf(t, out, comp, version)
		if _, want := ctfIndexOf(t, src, comp, version); d != want || len(idx.Manifests) != 2 || idx.Manifests[1].Annotations["software.ocm.artifact"] == "" {
			t.Errorf("index %s %+v, want the source's %s", d, idx, want)
		}
		check(t, out)
	})
	t.Run("CTF to registry to CTF", func(t *testing.T) {
		to := "http://" + reg.Host + "/ocm"
		transfer(t, src, to)
		idx := registryIndex(t, "ocm")
		if len(idx.Manifests) != 2 || idx.Manifests[0].ArtifactType != "application/vnd.ocm.software.component-descriptor.v2" ||
			!strings.Contains(idx.Manifests[1].Annotations["software.ocm.artifact"], `"name":"chart"`) || idx.Manifests[1].Digest.String() != "sha256:a420182a2f8ec4dd0528cc012c3f66aa04130392d3379b118ee522f1ec4f53b8" {
			t.Errorf("index in the registry %+v", idx)
		}
		check(t, to)
		if again := transfer(t, src, to); !strings.Contains(again, "nothing to copy") {
			t.Errorf("second run:\n%s", again)
		}
		back := filepath.Join(dir, "back")
		transfer(t, to, back)
		if idx, _ := ctfIndexOf(t, back, comp, version); len(idx.Manifests) != 2 {
			t.Errorf("index back in a CTF %+v", idx)
		}
		check(t, back)
	})
	t.Run("copy-resources", func(t *testing.T) {
		to := "http://" + reg.Host + "/moved"
		transfer(t, src, to, "--copy-resources")
		if idx := registryIndex(t, "moved"); len(idx.Manifests) != 1 {
			t.Errorf("the chart stayed in the index: %+v", idx)
		}
		resp, err := http.Head(reg.URL + "/v2/moved/component-descriptors/" + comp + "/blobs/sha256:53b3cbd202fd3a33d085d7f9249b5d00767b12bd1e14ba21bd09583ae5f48eb7")
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("the chart layer was not copied: %v %v", resp, err)
		}
		check(t, to)
	})
}

// ctfIndexOf reads the image index the tag of a version names in a CTF
// directory.
func ctfIndexOf(t *testing.T, dir, comp, version string) (ocispec.Index, string) {
	t.Helper()
	var ai struct {
		Artifacts []struct{ Repository, Tag, Digest, MediaType string }
	}
	readJSON(t, filepath.Join(dir, "artifact-index.json"), &ai)
	for _, a := range ai.Artifacts {
		if a.Repository == "component-descriptors/"+comp && a.Tag == version {
			if a.MediaType != ocispec.MediaTypeImageIndex {
				t.Fatalf("%s: the tag names %s", dir, a.MediaType)
			}
			var idx ocispec.Index
			readJSON(t, filepath.Join(dir, "blobs", strings.Replace(a.Digest, ":", ".", 1)), &idx)
			return idx, a.Digest
		}
	}
	t.Fatalf("%s: no tag %s", dir, version)
	return ocispec.Index{}, ""
}

func readJSON(t *testing.T, p string, v any) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", p, err)
	}
}
