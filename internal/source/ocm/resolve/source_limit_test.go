package resolve

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

type sizedBlob struct {
	io.Reader
	size int64
}

func (b sizedBlob) Close() error      { return nil }
func (b sizedBlob) Size() int64       { return b.size }
func (b sizedBlob) MediaType() string { return "application/x-tar" }
func (b sizedBlob) Digest() string    { return "" }

// A remote blob that delivers more than MaxBlobSize fails while it is read,
// whatever size it declared, so a stream is bounded as content read whole is.
func TestLimitedBlob(t *testing.T) {
	const limit = 1000
	for _, tt := range []struct {
		name    string
		n, size int64
		wantErr bool
	}{
		{"exactly the limit", limit, limit, false},
		{"exactly the limit, size undeclared", limit, -1, false},
		{"one byte more, size undeclared", limit + 1, -1, true},
		{"more than declared", 3 * limit, 10, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := &limitedBlob{Blob: sizedBlob{Reader: bytes.NewReader(make([]byte, tt.n)), size: tt.size}, limit: limit, left: limit}
			got, err := io.ReadAll(b)
			if tt.wantErr {
				if !errors.Is(err, errdef.ErrLimitExceeded) {
					t.Fatalf("err = %v, want ErrLimitExceeded", err)
				}
				if len(got) > limit+1 {
					t.Fatalf("read %d bytes past a limit of %d", len(got), limit)
				}
				return
			}
			if err != nil || int64(len(got)) != tt.n {
				t.Fatalf("read %d bytes, %v", len(got), err)
			}
		})
	}
}
