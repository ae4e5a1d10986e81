package archive_test

import (
	"archive/tar"
	"bytes"
	"io/fs"
	"path"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/archive"
)

func FuzzReadTree(f *testing.F) {
	seeds := [][]byte{
		mkTar(f),
		mkTar(f, dir("chart/"), file("chart/Chart.yaml", "name: c"), file("./chart/templates/a.yaml", "a")),
		mkTar(f, symlink("a/l", "../b"), file("b", "x"), hardlink("h", "a/l")),
		mkTar(f, file("../evil", "x")),
		mkTar(f, file("/abs", "x")),
		mkTar(f, symlink("l", "../../etc/passwd")),
		mkTar(f, symlink("a", "b"), symlink("b", "a")),
		mkTar(f, file("a", "x"), file("a/b", "y")),
		mkTar(f, special("dev", tar.TypeChar), special("fifo", tar.TypeFifo)),
		[]byte("not a tar"),
	}
	for _, s := range seeds[:4] {
		seeds = append(seeds, gz(f, s))
	}
	for _, s := range seeds {
		f.Add(s)
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		tree, err := archive.ReadTree(bytes.NewReader(data), archive.WithMaxSize(1<<20), archive.WithMaxFiles(256))
		if err != nil {
			if tree != nil {
				t.Fatal("tree returned with an error")
			}
			return
		}
		var size int64
		for _, name := range tree.Files() {
			if !fs.ValidPath(name) || name == "." || path.Clean(name) != name ||
				strings.ContainsAny(name, "\\\x00") || strings.HasPrefix(name, "../") {
				t.Fatalf("unclean path %q", name)
			}
			if _, err := archive.SecureJoin("/root", name); err != nil {
				t.Fatalf("accepted path %q fails SecureJoin: %v", name, err)
			}
			b, err := tree.ReadFile(name)
			if err != nil {
				t.Fatalf("listed file %q unreadable: %v", name, err)
			}
			size += int64(len(b))
		}
		if size != tree.Size() || size > 1<<20 {
			t.Fatalf("Size() = %d, files sum %d, limit %d", tree.Size(), size, 1<<20)
		}
		// The FS view must agree with Files and never report a file as a directory.
		if err := fs.WalkDir(tree.FS(), ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			_, rerr := tree.ReadFile(p)
			if d.IsDir() == (rerr == nil) {
				t.Fatalf("%q: FS says dir=%v, ReadFile err=%v", p, d.IsDir(), rerr)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	})
}
