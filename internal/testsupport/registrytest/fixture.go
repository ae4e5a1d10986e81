package registrytest

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/fixtures"
)

// FixtureAddr is where the OCM CLI fixture registry must listen: the
// transferred descriptors embed it in their ociArtifact image references.
const FixtureAddr = "127.0.0.1:5078"

// FixtureBase is the repository prefix (subPath) of the fixture transfer.
const FixtureBase = "ocm"

// ServeFixture serves a copy of the registry storage the OCM CLI wrote
// (testdata/ocm-cli/registry/storage, see its README) on FixtureAddr.
// It skips the test when that port is taken.
func ServeFixture(t testing.TB, opts ...Option) *Registry {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "storage")
	if err := CopyDir(fixtures.Path(t, "registry", "storage"), dir); err != nil {
		t.Fatalf("copy fixture registry storage: %v", err)
	}
	r, err := StartErr(t, append([]Option{WithStorageDir(dir), WithAddr(FixtureAddr)}, opts...)...)
	if errors.Is(err, ErrAddrInUse) {
		t.Skipf("skipping: the OCM CLI fixture registry must listen on %s (its descriptors embed that address) and the port is busy: %v", FixtureAddr, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// CopyDir copies a tree of regular files and directories.
func CopyDir(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}
