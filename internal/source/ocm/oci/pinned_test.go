package oci_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
)

// A pinned version whose digest is not the version's manifest digest is a
// mismatch naming both digests, whether the pinned manifest is another
// version's or does not exist; a missing version stays not found.
func TestPinnedVersionMismatch(t *testing.T) {
	ctx := context.Background()
	d := makeData(t)
	reg := registrytest.Start(t)
	pushed := reg.Push(t, "ocm", component(d, "1.0.0"), component(d, "1.1.0"))
	v100, v110 := pushed[0].ManifestDigest, pushed[1].ManifestDigest
	r := open(t, reg, t.TempDir())

	cv, err := r.LookupComponentVersion(ctx, compName, "1.0.0@"+v100)
	if err != nil || cv.Descriptor().Version != "1.0.0" || cv.DescriptorDigest() != v100 {
		t.Fatalf("pinned 1.0.0: %v", err)
	}
	zero := "sha256:" + strings.Repeat("0", 64)
	for _, tc := range []struct {
		version string
		is      error
		want    string
	}{
		{"1.0.0@" + v110, errdef.ErrDigestMismatch, "version 1.0.0 of component " + compName + " is " + v100 + ", not the pinned " + v110},
		{"1.0.0@" + zero, errdef.ErrDigestMismatch, "is " + v100 + ", not the pinned " + zero},
		{"9.9.9@" + v100, errdef.ErrNotFound, "available: 1.0.0, 1.1.0"},
		{"9.9.9@" + zero, errdef.ErrNotFound, "available: 1.0.0, 1.1.0"},
	} {
		_, err := r.LookupComponentVersion(ctx, compName, tc.version)
		if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %v containing %q", tc.version, err, tc.is, tc.want)
		}
	}
}
