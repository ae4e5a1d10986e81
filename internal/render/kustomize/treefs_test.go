package kustomize

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

const smallDeployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: big\nspec:\n  template:\n    spec:\n      containers:\n        - name: main\n          image: example.com/big:1.0.0\n"

// treeFixture is a small tree with nesting, for comparing the tree view with
// kyaml's own in-memory file system holding copies of the same files.
var treeFixture = map[string]string{
	"kustomization.yaml":          "resources:\n  - base\n",
	"base/kustomization.yaml":     "resources:\n  - deploy.yaml\n",
	"base/deploy.yaml":            smallDeployment,
	"base/.hidden.yaml":           "x: 1\n",
	"overlays/prod/patch.yaml":    "y: 2\n",
	"overlays/prod/empty.txt":     "",
	"overlays/prod/nested/a.yaml": "z: 3\n",
}

// reference is what the previous design built: every file copied into
// kyaml's in-memory file system under memRoot.
func reference(t *testing.T, m map[string]string) filesys.FileSystem {
	t.Helper()
	mem := filesys.MakeFsInMemory()
	for name, body := range m {
		if err := mem.WriteFile(filepath.Join(memRoot, name), []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	return mem
}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// TestTreeFileSystemMatchesKyaml asks both file systems the questions
// kustomize asks and wants the same answers, errors included.
func TestTreeFileSystemMatchesKyaml(t *testing.T) {
	tree := readTree(t, tarOf(t, files(treeFixture)...))
	got, err := inMemory(tree.FS())
	if err != nil {
		t.Fatal(err)
	}
	want := reference(t, treeFixture)

	paths := []string{
		"", "/", ".", "kustomization.yaml", "/kustomization.yaml", "//kustomization.yaml",
		"/base/deploy.yaml", "base/deploy.yaml", "/overlays/prod/../../base/deploy.yaml",
		"/base/./deploy.yaml", "/base/deploy.yaml/", "/../kustomization.yaml", "/../../base/deploy.yaml",
		"/base", "/base/", "/overlays/prod/nested", "/overlays/prod/empty.txt",
		"/missing.yaml", "/base/missing.yaml", "/base/deploy.yaml/x", "/base/.hidden.yaml",
	}
	for _, p := range paths {
		gd, gerr := got.ReadFile(p)
		wd, werr := want.ReadFile(p)
		if string(gd) != string(wd) || errText(gerr) != errText(werr) {
			t.Errorf("ReadFile(%q) = %q, %v; kyaml: %q, %v", p, gd, gerr, wd, werr)
		}
		if g, w := got.Exists(p), want.Exists(p); g != w {
			t.Errorf("Exists(%q) = %v, kyaml %v", p, g, w)
		}
		if g, w := got.IsDir(p), want.IsDir(p); g != w {
			t.Errorf("IsDir(%q) = %v, kyaml %v", p, g, w)
		}
		gdir, gf, gerr := got.CleanedAbs(p)
		wdir, wf, werr := want.CleanedAbs(p)
		if gdir != wdir || gf != wf || errText(gerr) != errText(werr) {
			t.Errorf("CleanedAbs(%q) = %q %q %v; kyaml %q %q %v", p, gdir, gf, gerr, wdir, wf, werr)
		}
		gl, gerr := got.ReadDir(p)
		wl, werr := want.ReadDir(p)
		sort.Strings(gl)
		sort.Strings(wl)
		if strings.Join(gl, ",") != strings.Join(wl, ",") || errText(gerr) != errText(werr) {
			t.Errorf("ReadDir(%q) = %v, %v; kyaml %v, %v", p, gl, gerr, wl, werr)
		}
	}
	for _, pattern := range []string{"/base/*", "/*/*.yaml", "/overlays/prod/*", "/base/.*"} {
		g, gerr := got.Glob(pattern)
		w, werr := want.Glob(pattern)
		if strings.Join(g, ",") != strings.Join(w, ",") || errText(gerr) != errText(werr) {
			t.Errorf("Glob(%q) = %v, %v; kyaml %v, %v", pattern, g, gerr, w, werr)
		}
	}
	type walked struct {
		path  string
		dir   bool
		size  int64
		isErr bool
	}
	walk := func(fsys filesys.FileSystem) []walked {
		var out []walked
		err := fsys.Walk("/", func(p string, info os.FileInfo, err error) error {
			w := walked{path: p, isErr: err != nil}
			if info != nil {
				w.dir, w.size = info.IsDir(), info.Size()
			}
			out = append(out, w)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	gw, ww := walk(got), walk(want)
	if len(gw) != len(ww) {
		t.Fatalf("Walk visits %v, kyaml %v", gw, ww)
	}
	for i := range gw {
		// kyaml reports a directory's entry count as its size; files must
		// report their real size although the structure holds them empty.
		if gw[i] != ww[i] {
			t.Errorf("Walk step %d = %+v, kyaml %+v", i, gw[i], ww[i])
		}
	}
}

func TestTreeFileSystemReadOnlyAndCopies(t *testing.T) {
	tree := readTree(t, tarOf(t, files(treeFixture)...))
	mem, err := inMemory(tree.FS())
	if err != nil {
		t.Fatal(err)
	}

	// kustomize may change what it reads; the tree is shared.
	b, err := mem.ReadFile("/base/deploy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	clear(b)
	if again, _ := mem.ReadFile("/base/deploy.yaml"); string(again) != smallDeployment {
		t.Fatalf("a caller's change to ReadFile's result reached the tree: %q", again)
	}

	f, err := mem.Open("/overlays/prod/../../base/deploy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(f)
	if err != nil || string(data) != smallDeployment {
		t.Fatalf("Open+Read = %q, %v", data, err)
	}
	if fi, err := f.Stat(); err != nil || fi.Size() != int64(len(smallDeployment)) || fi.Name() != "deploy.yaml" || fi.IsDir() {
		t.Fatalf("Stat = %v, %v", fi, err)
	}
	if _, err := f.Write([]byte("x")); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("Write on an open file: %v, want fs.ErrPermission", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := mem.Open("/missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open of a missing file: %v, want fs.ErrNotExist", err)
	}

	for name, op := range map[string]func() error{
		"WriteFile": func() error { return mem.WriteFile("/base/deploy.yaml", []byte("x")) },
		"WriteNew":  func() error { return mem.WriteFile("/new.yaml", []byte("x")) },
		"Create":    func() error { _, err := mem.Create("/new.yaml"); return err },
		"Mkdir":     func() error { return mem.Mkdir("/d") },
		"MkdirAll":  func() error { return mem.MkdirAll("/d/e") },
		"RemoveAll": func() error { return mem.RemoveAll("/base") },
	} {
		if err := op(); !errors.Is(err, fs.ErrPermission) {
			t.Errorf("%s: %v, want fs.ErrPermission", name, err)
		}
	}
	if again, err := mem.ReadFile("/base/deploy.yaml"); err != nil || string(again) != smallDeployment || mem.Exists("/new.yaml") || mem.Exists("/d") {
		t.Fatalf("a refused write changed the file system: %q, %v", again, err)
	}
}

// Names kyaml's in-memory file system refuses ([a-zA-Z0-9-_.:] only) are
// ordinary names here, at any depth.
func TestTreeFileSystemTakesAnyName(t *testing.T) {
	names := []string{"release-ha-1.21+", "my notes.txt", "a@b~c=d,e", "ünïcödé", strings.Repeat("x", 255)}
	m := map[string]string{}
	for _, n := range names {
		m[n+"/"+n] = n
	}
	fsys, err := inMemory(readTree(t, tarOf(t, files(m)...)).FS())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		p := "/" + n + "/" + n
		if b, err := fsys.ReadFile(p); err != nil || string(b) != n {
			t.Errorf("ReadFile(%q) = %q, %v", p, b, err)
		}
		if dir, f, err := fsys.CleanedAbs(p); err != nil || string(dir) != "/"+n || f != n {
			t.Errorf("CleanedAbs(%q) = %q, %q, %v", p, dir, f, err)
		}
		if !fsys.IsDir("/"+n) || fsys.IsDir(p) || !fsys.Exists(p) {
			t.Errorf("IsDir/Exists wrong for %q", n)
		}
		if l, err := fsys.ReadDir("/" + n); err != nil || len(l) != 1 || l[0] != n {
			t.Errorf("ReadDir(%q) = %v, %v", "/"+n, l, err)
		}
	}
	if got, err := fsys.Glob("/*/my notes.txt"); err != nil || len(got) != 1 {
		t.Errorf("Glob = %v, %v", got, err)
	}
}

// zeroTgz is a gzipped tar of small files plus one file of size zero bytes,
// written as a stream so that the test never holds the payload itself.
func zeroTgz(tb testing.TB, small []entry, name string, size int64) []byte {
	tb.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	tw := tar.NewWriter(zw)
	for _, e := range small {
		if err := tw.WriteHeader(&tar.Header{Name: e.name, Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(e.body))}); err != nil {
			tb.Fatal(err)
		}
		if _, err := io.WriteString(tw, e.body); err != nil {
			tb.Fatal(err)
		}
	}
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Typeflag: tar.TypeReg, Size: size}); err != nil {
		tb.Fatal(err)
	}
	zeros := make([]byte, 1<<20)
	for left := size; left > 0; left -= int64(len(zeros)) {
		if _, err := tw.Write(zeros[:min(left, int64(len(zeros)))]); err != nil {
			tb.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		tb.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

// TestRenderLargeTreeDoesNotCopyIt renders a kustomization next to a 32 MiB
// file it does not read (a sparse-ish payload: zeros, tiny gzipped). The
// tree is handed to kustomize without copying, so the render allocates far
// less than the payload; copying it into kyaml's file system, as before,
// allocated twice the payload.
func TestRenderLargeTreeDoesNotCopyIt(t *testing.T) {
	const payload = 32 << 20
	tree := readTree(t, zeroTgz(t, []entry{
		{name: kfile, body: "resources:\n  - deploy.yaml\n"},
		{name: "deploy.yaml", body: smallDeployment},
	}, "data/payload.bin", payload))
	if tree.Size() < payload {
		t.Fatalf("tree holds %d bytes, want the payload", tree.Size())
	}

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	objs, err := Render(context.Background(), tree, "")
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 || get(t, objs[0], "metadata", "name") != "big" {
		t.Fatalf("objects = %v", objs)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > payload/4 {
		t.Fatalf("render allocated %d MiB for a tree with a %d MiB file it does not read", alloc>>20, payload>>20)
	}
}
