package archive_test

import (
	"bytes"
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/archive"
)

// What Writer writes, ReadTree reads back; the same entries give the same
// bytes, gzipped or not.
func TestWriterRoundTripAndDeterminism(t *testing.T) {
	write := func(opts ...archive.WriteOption) []byte {
		var buf bytes.Buffer
		w := archive.NewWriter(&buf, opts...)
		if err := w.File("index.json", 2, strings.NewReader("{}")); err != nil {
			t.Fatal(err)
		}
		if err := w.Dir("blobs/"); err != nil {
			t.Fatal(err)
		}
		if err := w.File("blobs/sha256.abc", 5, strings.NewReader("hello")); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	for _, opts := range [][]archive.WriteOption{nil, {archive.WithGzip()}, {archive.WithUSTAR(), archive.WithFileMode(0)}} {
		a, b := write(opts...), write(opts...)
		if sha256.Sum256(a) != sha256.Sum256(b) {
			t.Fatalf("%d options: two writes differ", len(opts))
		}
		tree, err := archive.ReadTree(bytes.NewReader(a))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := tree.ReadFile("blobs/sha256.abc"); err != nil || string(got) != "hello" {
			t.Fatalf("read back %q, %v", got, err)
		}
		if got, err := tree.ReadFile("index.json"); err != nil || string(got) != "{}" {
			t.Fatalf("read back %q, %v", got, err)
		}
	}
	if bytes.Equal(write(), write(archive.WithGzip())) {
		t.Fatal("WithGzip wrote a plain tar")
	}
}
