package transfer_test

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/transfer"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/ocimapping"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
)

// largeBlobSize is the size of the generated local blob: far more than the
// memory the transfer may use.
const largeBlobSize = 256 << 20

// writeLargeCTF writes a CTF holding one component version with a local
// blob of size bytes, generated on the fly (never held in memory).
func writeLargeCTF(t *testing.T, dir string, size int64) string {
	t.Helper()
	blobs := filepath.Join(dir, "blobs")
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(blobs, "tmp")
	f, err := os.Create(tmp)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	if _, err := io.CopyN(io.MultiWriter(f, h), rand.NewChaCha8([32]byte{7}), size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	big := "sha256:" + hex.EncodeToString(h.Sum(nil))
	if err := os.Rename(tmp, filepath.Join(blobs, strings.Replace(big, ":", ".", 1))); err != nil {
		t.Fatal(err)
	}
	put := func(b []byte) ocispec.Descriptor {
		d := digest.FromBytes(b)
		if err := os.WriteFile(filepath.Join(blobs, strings.Replace(d.String(), ":", ".", 1)), b, 0o644); err != nil {
			t.Fatal(err)
		}
		return ocispec.Descriptor{Digest: d, Size: int64(len(b))}
	}
	doc := fmt.Sprintf(`component:
  componentReferences: []
  name: example.com/large/app
  provider: example.com
  repositoryContexts: []
  resources:
  - access:
      localReference: %s
      mediaType: application/octet-stream
      type: localBlob
    digest:
      hashAlgorithm: SHA-256
      normalisationAlgorithm: genericBlobDigest/v1
      value: %s
    name: data
    relation: local
    type: blob
    version: 1.0.0
  sources: []
  version: 1.0.0
meta:
  schemaVersion: v2
`, big, strings.TrimPrefix(big, "sha256:"))
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	tw.WriteHeader(&tar.Header{Name: "component-descriptor.yaml", Size: int64(len(doc)), Typeflag: tar.TypeReg, Format: tar.FormatUSTAR})
	tw.Write([]byte(doc))
	tw.Close()
	layer := put(tb.Bytes())
	layer.MediaType = ocimapping.MediaTypeDescriptorTar
	cfgRaw, _ := json.Marshal(map[string]any{"componentDescriptorLayer": layer})
	cfg := put(cfgRaw)
	cfg.MediaType = ocimapping.MediaTypeComponentConfig
	m := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, Config: cfg, Layers: []ocispec.Descriptor{layer,
		{MediaType: "application/octet-stream", Digest: digest.Digest(big), Size: size}}}
	m.SchemaVersion = 2
	mraw, _ := json.Marshal(m)
	md := put(mraw)
	idx := fmt.Sprintf(`{"schemaVersion":1,"artifacts":[{"repository":"component-descriptors/example.com/large/app","tag":"1.0.0","digest":%q,"mediaType":%q}]}`,
		md.Digest, ocispec.MediaTypeImageManifest)
	if err := os.WriteFile(filepath.Join(dir, "artifact-index.json"), []byte(idx), 0o644); err != nil {
		t.Fatal(err)
	}
	return big
}

// peakHeap samples the heap in use while f runs and returns the peak above
// what was in use before.
func peakHeap(f func()) uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var s runtime.MemStats
		for {
			runtime.ReadMemStats(&s)
			if s.HeapInuse > base && s.HeapInuse-base > peak.Load() {
				peak.Store(s.HeapInuse - base)
			}
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	f()
	close(done)
	wg.Wait()
	return peak.Load()
}

// A 256 MiB local blob goes CTF → registry → CTF tar streamed: the heap
// grows by a few MiB, not by the blob (measured with the registry serving
// from disk in the same process, so its buffers count too).
func TestLargeBlobStreamsWithBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 256 MiB three times")
	}
	src := t.TempDir()
	big := writeLargeCTF(t, src, largeBlobSize)
	reg := registrytest.Start(t, registrytest.WithStorageDir(t.TempDir()))
	to := "http://" + reg.Host + "/ocm"
	back := filepath.Join(t.TempDir(), "back.tar")
	const limit = 48 << 20
	for _, leg := range []struct{ from, to string }{{src, to}, {to, back}} {
		var s *transfer.Summary
		start := time.Now()
		var log string
		peak := peakHeap(func() {
			s, log = run(t, &transfer.Transfer{From: leg.from, To: leg.to, Component: "example.com/large/app", Version: "1.0.0", ProgressInterval: 50 * time.Millisecond})
		})
		// Progress during the long copy: blobs and bytes done of the total.
		if !strings.Contains(log, "blobs, ") || !strings.Contains(log, "MiB/256.0 MiB") {
			t.Errorf("no progress of the long copy:\n%s", log)
		}
		t.Logf("%s -> %s: %d bytes in %v, peak heap growth %.1f MiB", leg.from, leg.to, s.Bytes, time.Since(start).Round(time.Millisecond), float64(peak)/(1<<20))
		if s.Bytes < largeBlobSize {
			t.Errorf("copied %d bytes", s.Bytes)
		}
		if peak > limit {
			t.Errorf("peak heap growth %d MiB, want < %d MiB: the blob is not streamed", peak>>20, limit>>20)
		}
	}
	// The tar holds the blob, verified on the way in.
	f, err := os.Open(back)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	found := false
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		if h.Name == "blobs/"+strings.Replace(big, ":", ".", 1) {
			hh := sha256.New()
			io.Copy(hh, tr)
			found = "sha256:"+hex.EncodeToString(hh.Sum(nil)) == big
		}
	}
	if !found {
		t.Errorf("%s does not hold the blob %s", back, big)
	}
}
