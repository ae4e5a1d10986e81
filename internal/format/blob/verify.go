package blob

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

// ParseDigest splits "sha256:<hex>" (or the flat file form "sha256.<hex>") into
// algorithm and lower-case hex, checking both.
func ParseDigest(d string) (alg, hexValue string, err error) {
	alg, hexValue, ok := strings.Cut(d, ":")
	if !ok {
		alg, hexValue, ok = strings.Cut(d, ".")
	}
	if !ok {
		return "", "", fmt.Errorf("%w: %s is not a digest", errdef.ErrInvalidInput, errdef.Quote(d))
	}
	want := 0
	switch alg {
	case "sha256":
		want = sha256.Size * 2
	case "sha512":
		want = sha512.Size * 2
	default:
		return "", "", fmt.Errorf("%w: digest %s: unsupported algorithm %s", errdef.ErrInvalidInput, errdef.Quote(d), errdef.Quote(alg))
	}
	if len(hexValue) != want {
		return "", "", fmt.Errorf("%w: digest %s: want %d hex characters", errdef.ErrInvalidInput, errdef.Quote(d), want)
	}
	if _, err := hex.DecodeString(hexValue); err != nil || strings.ToLower(hexValue) != hexValue {
		return "", "", fmt.Errorf("%w: digest %s: not lower-case hex", errdef.ErrInvalidInput, errdef.Quote(d))
	}
	return alg, hexValue, nil
}

// Normalize returns the digest in "alg:hex" form.
func Normalize(d string) (string, error) {
	alg, h, err := ParseDigest(d)
	if err != nil {
		return "", err
	}
	return alg + ":" + h, nil
}

func newHash(alg string) hash.Hash {
	if alg == "sha512" {
		return sha512.New()
	}
	return sha256.New()
}

// Digest returns the "sha256:<hex>" digest of b.
func Digest(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// Verifier wraps a reader and hashes what passes through it. At EOF it checks
// the digest (and size, when known) and returns an error wrapping
// errdef.ErrDigestMismatch instead of io.EOF when they differ, so a consumer
// that reads to the end cannot miss a mismatch.
type Verifier struct {
	r      io.Reader
	closer io.Closer
	h      hash.Hash
	alg    string
	want   string
	size   int64 // -1: unknown
	n      int64
	err    error
}

// NewVerifier returns a Verifier for r; size < 0 means unknown. rc may be an
// io.ReadCloser, its Close is called by the Verifier's Close.
func NewVerifier(r io.Reader, digest string, size int64) (*Verifier, error) {
	alg, h, err := ParseDigest(digest)
	if err != nil {
		return nil, err
	}
	v := &Verifier{r: r, h: newHash(alg), alg: alg, want: h, size: size}
	if c, ok := r.(io.Closer); ok {
		v.closer = c
	}
	return v, nil
}

func (v *Verifier) Read(p []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	n, err := v.r.Read(p)
	v.h.Write(p[:n])
	v.n += int64(n)
	if v.size >= 0 && v.n > v.size {
		v.err = fmt.Errorf("%w: %s:%s: more than the declared %d bytes", errdef.ErrDigestMismatch, v.alg, v.want, v.size)
		return n, v.err
	}
	if err == io.EOF {
		if err := v.check(); err != nil {
			v.err = err
			return n, err
		}
	}
	if err != nil {
		v.err = err
	}
	return n, err
}

func (v *Verifier) check() error {
	if v.size >= 0 && v.n != v.size {
		return fmt.Errorf("%w: %s:%s: got %d bytes, want %d", errdef.ErrDigestMismatch, v.alg, v.want, v.n, v.size)
	}
	got := hex.EncodeToString(v.h.Sum(nil))
	if got != v.want {
		return fmt.Errorf("%w: content hashes to %s:%s, want %s:%s", errdef.ErrDigestMismatch, v.alg, got, v.alg, v.want)
	}
	return nil
}

// Close closes the underlying reader.
func (v *Verifier) Close() error {
	if v.closer != nil {
		return v.closer.Close()
	}
	return nil
}

// ReadAll reads r completely, at most limit bytes, and verifies it against
// digest (and size when >= 0).
func ReadAll(r io.Reader, digest string, size, limit int64) ([]byte, error) {
	if size > limit {
		return nil, fmt.Errorf("%w: blob %s is %d bytes, more than the limit of %d", errdef.ErrLimitExceeded, digest, size, limit)
	}
	v, err := NewVerifier(r, digest, size)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if size > 0 {
		buf.Grow(int(size))
	}
	n, err := io.Copy(&buf, io.LimitReader(v, limit+1))
	if err != nil {
		return nil, err
	}
	if n > limit {
		return nil, fmt.Errorf("%w: blob %s is more than the limit of %d bytes", errdef.ErrLimitExceeded, digest, limit)
	}
	return buf.Bytes(), nil
}
