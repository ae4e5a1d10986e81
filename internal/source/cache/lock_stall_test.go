package cache

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"testing"
	"time"
)

// trickle returns a fetch that sends a few bytes and then hangs until ctx ends:
// a tarpit registry.
func trickle(data []byte) FetchFunc {
	return func(ctx context.Context) (io.ReadCloser, error) {
		pr, pw := io.Pipe()
		go func() {
			pw.Write(data[:1024])
			<-ctx.Done()
			pw.CloseWithError(ctx.Err())
		}()
		return pr, nil
	}
}

func fast(data []byte) FetchFunc {
	return func(context.Context) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
}

// A download that stalls holds another fetch of the same digest for about
// lockStall, not until the holder's deadline: in this process (one Cache)
// and across processes (two Caches on one directory exclude each other with
// flock only), the waiter then downloads by itself.
func TestStalledHolderIsGivenUpOn(t *testing.T) {
	data, d := randomBlob(t, 1<<20)
	for _, tc := range []struct {
		name   string
		second func(dir string, first *Cache) *Cache
	}{
		{"in process", func(_ string, first *Cache) *Cache { return first }},
		{"across processes", func(dir string, _ *Cache) *Cache { return Open(dir, WithLogger(discard())) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			first := Open(dir, WithLogger(discard()))
			holderCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			held := make(chan error, 1)
			locked := make(chan struct{}) // the holder fetches once it has the locks
			go func() {
				rc, err := first.Fetch(holderCtx, d, int64(len(data)), func(ctx context.Context) (io.ReadCloser, error) {
					close(locked)
					return trickle(data)(ctx)
				})
				if err == nil {
					_, err = io.Copy(io.Discard, rc)
					rc.Close()
				}
				held <- err
			}()
			<-locked
			start := time.Now()
			rc, err := tc.second(dir, first).Fetch(context.Background(), d, int64(len(data)), fast(data))
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(rc)
			rc.Close()
			took := time.Since(start)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("waiter: %v (%d bytes)", err, len(got))
			}
			t.Logf("waiter had its blob after %v", took.Round(time.Millisecond))
			if took > lockStall+2*time.Second {
				t.Errorf("waiter waited %v for a stalled holder", took)
			}
			select {
			case err := <-held:
				t.Fatalf("the holder finished: %v", err)
			default:
			}
			cancel()
			<-held
		})
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// A shared Memo's caller waits for another's slow call at most
// recentMaxWait, then calls by itself.
func TestRecentMemoWaitIsBounded(t *testing.T) {
	m := NewRecent[string, string](time.Minute)
	release := make(chan struct{})
	defer close(release)
	calling := make(chan struct{})
	go m.Do(context.Background(), "tag", func(context.Context) (string, error) {
		close(calling)
		<-release // a tarpit registry
		return "slow", nil
	})
	<-calling
	start := time.Now()
	v, err := m.Do(context.Background(), "tag", func(context.Context) (string, error) { return "own", nil })
	if err != nil || v != "own" {
		t.Fatalf("%q, %v", v, err)
	}
	if took := time.Since(start); took > recentMaxWait+time.Second {
		t.Errorf("waited %v", took)
	}
}
