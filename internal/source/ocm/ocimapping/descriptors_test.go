package ocimapping_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/ocimapping"
)

// A kept descriptor is handed out only after the asking generation's own
// fetch of the config and the descriptor layer succeeded, and as a copy.
func TestDescriptorsKeepByVerifiedLayer(t *testing.T) {
	b := v2Blobs(t)
	v, err := resolve(t, b, helmDirIndex)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ds := ocimapping.NewDescriptors(0)
	first, err := ds.Read(ctx, b, v.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	if ds.Len() != 1 {
		t.Fatalf("kept %d descriptors, want 1", ds.Len())
	}
	want, err := ocimapping.ReadDescriptor(ctx, b, v.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(first, want) {
		t.Fatalf("descriptor as kept differs from one decoded:\n%+v\n%+v", first, want)
	}

	// What a generation does to its descriptor reaches no later one.
	first.Name = "changed"
	first.Resources[0].Access.Fields["localReference"] = "changed"
	first.Raw[0] = 'X'
	second, err := ds.Read(ctx, b, v.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(second, want) {
		t.Fatalf("a change to a handed-out descriptor reached the kept one:\n%+v\n%+v", second, want)
	}

	// A generation whose fetch fails (another tenant's credentials, a
	// registry that does not hold the layer) fails as before, kept or not.
	for _, missing := range []digest.Digest{v.Manifest.Config.Digest, v.Manifest.Layers[0].Digest} {
		held := blobs{}
		for k, c := range b {
			if k != missing {
				held[k] = c
			}
		}
		if _, err := ds.Read(ctx, held, v.Manifest); !errors.Is(err, errdef.ErrNotFound) {
			t.Errorf("without blob %s: %v, want not found", missing, err)
		}
	}

	// Bytes that do not match the layer's digest are refused, not answered
	// from what was kept for the digest.
	forged := blobs{}
	for k, c := range b {
		forged[k] = c
	}
	for _, l := range v.Manifest.Layers {
		forged[l.Digest] = []byte(`{"meta":{"schemaVersion":"v2"},"component":{"name":"ocm.example/forged","version":"1.0.0"}}`)
	}
	if _, err := ds.Read(ctx, forged, v.Manifest); !errors.Is(err, errdef.ErrDigestMismatch) {
		t.Errorf("forged layer: %v, want a digest mismatch", err)
	}
}

// A nil Descriptors keeps nothing and decodes as ReadDescriptor does.
func TestDescriptorsNil(t *testing.T) {
	b := v2Blobs(t)
	v, err := resolve(t, b, helmDirIndex)
	if err != nil {
		t.Fatal(err)
	}
	var ds *ocimapping.Descriptors
	d, err := ds.Read(context.Background(), b, v.Manifest)
	if err != nil || d.Name != "ocm.example/fixtures/helm-dir" || ds.Len() != 0 {
		t.Fatalf("%v %v (kept %d)", d, err, ds.Len())
	}
}
