package ctf_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/ctf"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/fixtures"
)

// "<version>@<digest>" is read by a CTF like by a registry: the version
// resolves, and the digest must be its manifest digest.
func TestPinnedVersion(t *testing.T) {
	ctx := context.Background()
	r, err := ctf.Open("../../../../testdata/demo/ctf")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	const comp = "example.com/demo/podinfo"
	cv, err := r.LookupComponentVersion(ctx, comp, "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	v100 := cv.DescriptorDigest()
	cv, err = r.LookupComponentVersion(ctx, comp, "1.1.0+build.7")
	if err != nil {
		t.Fatal(err)
	}
	v110 := cv.DescriptorDigest()

	for _, pinned := range []string{"1.0.0@" + v100} {
		cv, err := r.LookupComponentVersion(ctx, comp, pinned)
		if err != nil {
			t.Fatalf("%s: %v", pinned, err)
		}
		if cv.Descriptor().Version != "1.0.0" || cv.DescriptorDigest() != v100 {
			t.Fatalf("%s: got %s %s", pinned, cv.Descriptor().Version, cv.DescriptorDigest())
		}
	}
	if cv, err := r.LookupComponentVersion(ctx, comp, "1.1.0+build.7@"+v110); err != nil || cv.Descriptor().Version != "1.1.0+build.7" {
		t.Fatalf("1.1.0+build.7 pinned: %v", err)
	}

	zero := "sha256:" + strings.Repeat("0", 64)
	for _, tc := range []struct {
		version string
		is      error
		want    string
	}{
		{"1.0.0@" + v110, errdef.ErrDigestMismatch, "version 1.0.0 of component example.com/demo/podinfo is " + v100 + ", not the pinned " + v110},
		{"1.0.0@" + zero, errdef.ErrDigestMismatch, "not the pinned " + zero},
		{"9.9.9@" + v100, errdef.ErrNotFound, "available: 1.0.0, 1.1.0+build.7"},
		{"1.0.0@sha256:abc", errdef.ErrInvalidInput, "pinned digest"},
		{"@" + v100, errdef.ErrInvalidInput, "empty version"},
	} {
		_, err := r.LookupComponentVersion(ctx, comp, tc.version)
		if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %v containing %q", tc.version, err, tc.is, tc.want)
		}
	}
}

// A component archive names its version by no digest: a pin is refused,
// never ignored.
func TestPinnedVersionInComponentArchive(t *testing.T) {
	r, err := ctf.Open(fixtures.Path(t, "component-archive"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = r.LookupComponentVersion(context.Background(), "example.com/fixtures/legacy-ca", "1.0.0@sha256:"+strings.Repeat("0", 64))
	if !errors.Is(err, errdef.ErrDigestMismatch) || !strings.Contains(err.Error(), "names it by no digest") {
		t.Fatalf("got %v", err)
	}
}
