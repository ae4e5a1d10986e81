package cache_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/cache"
)

func Example() {
	dir, _ := os.MkdirTemp("", "cache-example")
	defer os.RemoveAll(dir)
	c := cache.Open(dir, cache.WithMaxSize(64<<20))

	content := []byte("a chart, say")
	d := blob.Digest(content)
	downloads := 0
	fetch := func(context.Context) (io.ReadCloser, error) {
		downloads++ // a registry request in real use
		return io.NopCloser(bytes.NewReader(content)), nil
	}
	for i := 0; i < 3; i++ {
		rc, err := c.Fetch(context.Background(), d, int64(len(content)), fetch)
		if err != nil {
			fmt.Println(err)
			return
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		fmt.Println(string(b))
	}
	fmt.Println("downloads:", downloads)

	// Content that does not match its digest is refused, and not cached.
	_, err := c.Fetch(context.Background(), blob.Digest([]byte("other")), -1, fetch)
	fmt.Println("refused:", errors.Is(err, errdef.ErrDigestMismatch))
	// Output:
	// a chart, say
	// a chart, say
	// a chart, say
	// downloads: 1
	// refused: true
}
