package counting_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/counting"
)

// Both count what passed, short reads and a failing writer included.
func TestCounting(t *testing.T) {
	r := &counting.Reader{R: iotest.OneByteReader(strings.NewReader("hello, world"))}
	var buf bytes.Buffer
	w := &counting.Writer{W: &buf}
	if _, err := io.Copy(w, r); err != nil {
		t.Fatal(err)
	}
	if r.N != 12 || w.N != 12 || buf.String() != "hello, world" {
		t.Fatalf("read %d, wrote %d: %q", r.N, w.N, buf.String())
	}
	fail := &counting.Writer{W: iotest.TruncateWriter(failing{}, 3)}
	if n, _ := fail.Write([]byte("abcdef")); fail.N != int64(n) {
		t.Fatalf("counted %d of %d written", fail.N, n)
	}
}

type failing struct{}

func (failing) Write(p []byte) (int, error) { return 0, errors.New("no") }
