package manifests

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/counting"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/nesting"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/parallel"
)

// Objects of a stream are encoded in parallel, in up to GOMAXPROCS
// goroutines, when there are at least parallelMinObjects of them: each
// object's text depends on that object alone, so the stream is the same.
// A chart's CRDs are megabytes of YAML (kube-prometheus-stack: 4 MB), which
// the YAML writer takes most of a second for on one core.
const parallelMinObjects = 8

// encodeEach encodes every object with enc and returns the texts in order,
// or the error of the first object (by index) that failed; a panic of enc
// reaches the caller's goroutine.
func encodeEach(objs []Object, enc func(o Object) ([]byte, error)) ([][]byte, int, error) {
	out := make([][]byte, len(objs))
	errs := make([]error, len(objs))
	workers := min(runtime.GOMAXPROCS(0), len(objs))
	if len(objs) < parallelMinObjects {
		workers = 1
	}
	if f := parallel.EachInOrder(len(objs), workers, func(i int) error {
		out[i], errs[i] = enc(objs[i])
		return errs[i]
	}); f >= 0 {
		return nil, f, errs[f]
	}
	return out, -1, nil
}

// JSONDocument is o as EncodeJSON writes it, without the "---" line before
// it and the newline after it, with EncodeJSON's errors.
func JSONDocument(o Object) ([]byte, error) { return jsonDoc(o) }

// jsonDoc is one object as EncodeJSON writes it, without the "---" line and
// the newline: see EncodeJSON.
func jsonDoc(o Object) ([]byte, error) {
	scratch := jsonScratch.Get().(*[]byte)
	b, ok := appendJSON((*scratch)[:0], map[string]any(o), 0)
	var doc []byte
	if ok {
		doc = append(doc, b...)
	}
	if cap(b) <= maxJSONScratch {
		*scratch = b
	}
	jsonScratch.Put(scratch)
	if !ok {
		if !nesting.Within(map[string]any(o)) {
			return nil, errTooDeep()
		}
		var buf appendWriter
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(o); err != nil {
			return nil, err
		}
		doc = buf[:len(buf)-1]
	}
	if !yamlAllowed(doc) {
		doc = escapeForYAML(doc)
	}
	if n := longKey(doc); n > 0 {
		return nil, fmt.Errorf("a mapping key of %d characters as JSON, more than the %d YAML readers accept: %w", n, maxJSONKey, errdef.ErrInvalidInput)
	}
	return doc, nil
}

// encodeOnce writes the stream EncodeStream encodes with one Write, once
// every object is encoded (Encode, EncodeJSON).
func encodeOnce(w io.Writer, objs []Object, asJSON bool) error {
	s, err := EncodeStream(objs, asJSON)
	if err != nil {
		return err
	}
	_, err = w.Write(joinDocs(s.docs, s.suffix))
	return err
}

// joinDocs is the stream of docs, each after a "---" line and followed by
// suffix.
func joinDocs(docs [][]byte, suffix string) []byte {
	n := 0
	for _, d := range docs {
		n += 4 + len(d) + len(suffix)
	}
	b := make([]byte, 0, n)
	for _, d := range docs {
		b = append(b, "---\n"...)
		b = append(b, d...)
		b = append(b, suffix...)
	}
	return b
}

// jsonScratch holds the buffers appendJSON writes documents into before
// they are copied out at their size, as encoding/json keeps its own: a
// document written into a slice of its own would grow it a quarter at a
// time, copying a CRD of 0.5 MB several times over.
var jsonScratch = sync.Pool{New: func() any { return new([]byte) }}

// maxJSONScratch is the largest buffer jsonScratch keeps.
const maxJSONScratch = 4 << 20

// appendWriter keeps what is written to it. json.Encoder writes a document
// with one Write, which a nil appendWriter copies into a slice of its
// size: a bytes.Buffer would clear a slice of twice that size first (a
// CRD of 0.5 MB, megabytes per chart).
type appendWriter []byte

func (w *appendWriter) Write(p []byte) (int, error) {
	*w = append(*w, p...)
	return len(p), nil
}

// Stream is an encoded stream of documents (EncodeStream): the text that
// Encode or EncodeJSON writes, kept as the documents' texts rather than
// joined into one, so that writing it does not copy megabytes of CRDs
// twice (into the joined stream and into the caller's buffer).
type Stream struct {
	docs   [][]byte
	suffix string
}

// EncodeStream encodes objs as Encode does, or as EncodeJSON does when
// asJSON, with their errors, and returns the stream to write.
func EncodeStream(objs []Object, asJSON bool) (*Stream, error) {
	return EncodeStreamKnown(objs, asJSON, nil)
}

// Known returns the text JSONDocument gives for o when the caller holds it
// already (o is a copy of an object kept encoded, and still equal to it),
// else false.
type Known func(o Object) ([]byte, bool)

// EncodeStreamKnown is EncodeStream, except that with asJSON the text of an
// object that known (when set) holds is not encoded again: the stream is
// the same, without the work. The render server keeps charts' CRDs decoded
// and encoded, megabytes of JSON per render of an operator chart.
func EncodeStreamKnown(objs []Object, asJSON bool, known Known) (*Stream, error) {
	enc, suffix := marshalYAML, ""
	if asJSON {
		enc, suffix = jsonDoc, "\n"
		if known != nil {
			enc = func(o Object) ([]byte, error) {
				if doc, ok := known(o); ok {
					return doc, nil
				}
				return jsonDoc(o)
			}
		}
	}
	docs, i, err := encodeEach(objs, enc)
	if err != nil {
		return nil, fmt.Errorf("encoding object %d (%s): %w", i, Key(objs[i]), err)
	}
	return &Stream{docs: docs, suffix: suffix}, nil
}

// Len is the length of the stream's text.
func (s *Stream) Len() int {
	n := 0
	for _, d := range s.docs {
		n += 4 + len(d) + len(s.suffix)
	}
	return n
}

// streamChunk is the buffer WriteTo gathers small documents in; a document
// at least this long is written as it is, without a copy.
const streamChunk = 64 << 10

// WriteTo writes the stream's text to w: small documents gathered into
// writes of streamChunk bytes, large ones written straight from their
// texts. Unlike Encode, this is more than one Write; a writer that can
// grow (a bytes.Buffer, as the render server collects stdout in) is grown
// once to the stream's length first, not doubled along the way.
func (s *Stream) WriteTo(w io.Writer) (int64, error) {
	if g, ok := w.(interface{ Grow(n int) }); ok {
		g.Grow(s.Len())
	}
	cw := &counting.Writer{W: w}
	bw := bufio.NewWriterSize(cw, streamChunk)
	for _, d := range s.docs {
		bw.WriteString("---\n")
		bw.Write(d)
		if _, err := bw.WriteString(s.suffix); err != nil {
			return cw.N, err
		}
	}
	err := bw.Flush()
	return cw.N, err
}
