package kustomize

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/archive"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
)

// richDir is the overlay fixture of this package, relative to the package directory.
var richDir = filepath.Join("..", "..", "..", "testdata", "kustomize", "rich")

// entry is one tar entry: a file, or a symlink when link is set.
type entry struct {
	name, body, link string
}

// tarOf builds a tar archive holding entries, in order.
func tarOf(tb testing.TB, entries ...entry) []byte {
	tb.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(e.body))}
		if e.link != "" {
			hdr = &tar.Header{Name: e.name, Mode: 0o777, Typeflag: tar.TypeSymlink, Linkname: e.link}
		}
		if err := tw.WriteHeader(hdr); err != nil {
			tb.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			tb.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

// files makes file entries from a map, in sorted order.
func files(m map[string]string) []entry {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]entry, 0, len(m))
	for _, n := range names {
		out = append(out, entry{name: n, body: m[n]})
	}
	return out
}

// tarDir builds a tar archive of a directory on disk, as the OCM CLI packs a
// directoryTree resource: relative paths, regular files and directories.
func tarDir(tb testing.TB, dir string) []byte {
	tb.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		hdr, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if d.IsDir() {
			hdr.Name += "/"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if d.Type().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			_, err = tw.Write(data)
			return err
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

func gzipped(tb testing.TB, data []byte) []byte {
	tb.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(data); err != nil {
		tb.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

func readTree(tb testing.TB, data []byte) *archive.Tree {
	tb.Helper()
	tree, err := archive.ReadTree(bytes.NewReader(data))
	if err != nil {
		tb.Fatalf("ReadTree: %v", err)
	}
	return tree
}

// byKey indexes objects by manifests.Key, failing on duplicates.
func byKey(tb testing.TB, objs []manifests.Object) map[string]manifests.Object {
	tb.Helper()
	m := make(map[string]manifests.Object, len(objs))
	for _, o := range objs {
		k := manifests.Key(o)
		if _, dup := m[k]; dup {
			tb.Fatalf("duplicate object %s", k)
		}
		m[k] = o
	}
	return m
}

// get walks o along keys (strings for maps, ints for lists).
func get(tb testing.TB, o any, keys ...any) any {
	tb.Helper()
	cur := o
	for i, k := range keys {
		switch k := k.(type) {
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				tb.Fatalf("path %v: element %d is %T, not a map", keys, i, cur)
			}
			cur, ok = m[k]
			if !ok {
				tb.Fatalf("path %v: no key %q", keys, k)
			}
		case int:
			l, ok := cur.([]any)
			if !ok || k >= len(l) {
				tb.Fatalf("path %v: element %d is not a list of more than %d items", keys, i, k)
			}
			cur = l[k]
		}
	}
	return cur
}
