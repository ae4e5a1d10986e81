package transfer

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/bytesize"
)

// progress writes what a transfer does to stderr: a line per version,
// resource and blob, and during a long blob a line every interval with
// blobs and bytes done of the version's total.
type progress struct {
	w        io.Writer
	interval time.Duration

	mu                sync.Mutex
	blobs, totalBlobs int64
	bytes, totalBytes int64
	last              time.Time
}

func newProgress(w io.Writer, interval time.Duration) *progress {
	if interval <= 0 {
		interval = 2 * time.Second
	}
	return &progress{w: w, interval: interval}
}

func (p *progress) line(format string, args ...any) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, format+"\n", args...)
}

func (p *progress) start(blobs, bytes int64) {
	p.mu.Lock()
	p.blobs, p.totalBlobs, p.bytes, p.totalBytes, p.last = 0, blobs, 0, bytes, time.Now()
	p.mu.Unlock()
	if blobs > 0 {
		p.line("  ...copying %d blobs, %s", blobs, bytesize.Format(bytes))
	}
}

func (p *progress) add(n int64) {
	p.mu.Lock()
	p.bytes += n
	due := p.w != nil && time.Since(p.last) >= p.interval
	if due {
		p.last = time.Now()
	}
	p.mu.Unlock()
	if due {
		p.report()
	}
}

func (p *progress) blobDone() {
	p.mu.Lock()
	p.blobs++
	p.mu.Unlock()
}

func (p *progress) report() {
	p.mu.Lock()
	b, tb, n, tn := p.blobs, p.totalBlobs, p.bytes, p.totalBytes
	p.mu.Unlock()
	p.line("  ...%d/%d blobs, %s/%s", b, tb, bytesize.Format(n), bytesize.Format(tn))
}

func (p *progress) finish() {
	if p.totalBlobs > 0 {
		p.report()
	}
}
