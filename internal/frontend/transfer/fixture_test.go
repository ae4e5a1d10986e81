package transfer_test

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"maps"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/transfer"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
)

func untarOne(raw []byte) ([]byte, error) {
	tr := tar.NewReader(bytes.NewReader(raw))
	h, err := tr.Next()
	if err != nil {
		return nil, err
	}
	if h.Name != "component-descriptor.yaml" {
		return nil, errors.New("unexpected entry " + h.Name)
	}
	return io.ReadAll(tr)
}

// transferFixtures does what the OCM CLI did to make
// testdata/ocm-cli/registry: every version of ctf/ (with --copy-resources
// and ociArtifact accesses kept) and of ctf-signed/ into one registry at
// prefix ocm.
func transferFixtures(t *testing.T, reg *registrytest.Registry) {
	t.Helper()
	to := "http://" + reg.Host + "/ocm"
	for _, src := range []string{"ctf", "ctf-signed"} {
		dir := fixtureDir(t, src)
		for _, cv := range ctfVersions(t, dir) {
			run(t, &transfer.Transfer{From: dir, To: to, Component: cv[0], Version: cv[1], CopyResources: true})
		}
	}
}

// The transfer writes what the OCM CLI v0.48.0 wrote for the same transfer
// (testdata/ocm-cli/registry): the same repositories and tags; manifests
// with the same config and layer media types, the same local blob layers
// (digest, size, annotations) and the same annotations but the creator;
// descriptors equal once the registry address is the fixture's — byte for
// byte: the same YAML serialisation and the same tar layout, so that on
// 127.0.0.1:5078 even the digests of descriptor layers, configs and
// manifests would be the CLI's. Charts are the same OCI artifacts (same
// manifest digests) in the same repositories.
func TestTransferMatchesOCMCLIRegistry(t *testing.T) {
	// On the fixture's address the descriptors are the CLI's byte for byte,
	// and so are the digests of descriptor layers and configs.
	reg, err := registrytest.StartErr(t, registrytest.WithAddr(registrytest.FixtureAddr))
	if err != nil {
		t.Logf("%s is busy (%v): comparing with the address replaced", registrytest.FixtureAddr, err)
		reg = registrytest.Start(t)
	}
	transferFixtures(t, reg)
	got := readRegistry(t, reg)
	want := readStorage(t, fixtureDir(t, "registry/storage"))

	if g, w := strings.Join(got.repositories(), "\n"), strings.Join(want.repositories(), "\n"); g != w {
		t.Fatalf("repositories:\n%s\nwant (the OCM CLI's):\n%s", g, w)
	}
	for _, repo := range want.repositories() {
		if !maps.Equal(keys(got.tags[repo]), keys(want.tags[repo])) {
			t.Errorf("%s: tags %v, want %v", repo, keys(got.tags[repo]), keys(want.tags[repo]))
			continue
		}
		for tag, wd := range want.tags[repo] {
			gm, wm := got.manifest(t, repo, tag), want.manifest(t, repo, tag)
			if !strings.Contains(repo, "component-descriptors/") {
				// A chart: the artifact itself, untouched.
				if got.tags[repo][tag] != wd {
					t.Errorf("%s:%s: manifest %s, the OCM CLI's is %s", repo, tag, got.tags[repo][tag], wd)
				}
				continue
			}
			if gm.MediaType != wm.MediaType || gm.Config.MediaType != wm.Config.MediaType || len(gm.Layers) != len(wm.Layers) {
				t.Errorf("%s:%s: manifest shape differs:\n%s\nwant\n%s", repo, tag, got.blobs[got.tags[repo][tag]], want.blobs[wd])
				continue
			}
			if gm.Layers[0].MediaType != wm.Layers[0].MediaType {
				t.Errorf("%s:%s: descriptor layer media type %s, want %s", repo, tag, gm.Layers[0].MediaType, wm.Layers[0].MediaType)
			}
			for i := 1; i < len(wm.Layers); i++ {
				g, w := gm.Layers[i], wm.Layers[i]
				if g.Digest != w.Digest || g.Size != w.Size || g.MediaType != w.MediaType || !maps.Equal(g.Annotations, w.Annotations) {
					t.Errorf("%s:%s: layer %d = %+v, want %+v", repo, tag, i, g, w)
				}
			}
			ga, wa := maps.Clone(gm.Annotations), maps.Clone(wm.Annotations)
			if ga["software.ocm.creator"] != transfer.Creator {
				t.Errorf("%s:%s: creator %q", repo, tag, ga["software.ocm.creator"])
			}
			delete(ga, "software.ocm.creator")
			delete(wa, "software.ocm.creator")
			if !maps.Equal(ga, wa) {
				t.Errorf("%s:%s: annotations %v, want %v", repo, tag, ga, wa)
			}
			gd := strings.ReplaceAll(string(got.descriptor(t, repo, tag)), reg.Host, registrytest.FixtureAddr)
			wdoc := string(want.descriptor(t, repo, tag))
			if gd != wdoc {
				var gv, wv any
				_ = yaml.Unmarshal([]byte(gd), &gv)
				_ = yaml.Unmarshal([]byte(wdoc), &wv)
				t.Errorf("%s:%s: descriptor differs from the OCM CLI's:\n%s\nwant\n%s", repo, tag, gd, wdoc)
			}
			// The tar layout is the CLI's too: re-packing the CLI's
			// document with our writer gives the CLI's layer.
			if reg.Host == registrytest.FixtureAddr && (gm.Layers[0].Digest != wm.Layers[0].Digest || gm.Config.Digest != wm.Config.Digest) {
				t.Errorf("%s:%s: descriptor layer %s and config %s, want %s and %s", repo, tag, gm.Layers[0].Digest, gm.Config.Digest, wm.Layers[0].Digest, wm.Config.Digest)
			}
		}
	}
}

func keys(m map[string]string) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}
