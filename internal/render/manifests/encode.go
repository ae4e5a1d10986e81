package manifests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/errdef"
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
	if f := eachInOrder(len(objs), workers, func(i int) error {
		out[i], errs[i] = enc(objs[i])
		return errs[i]
	}); f >= 0 {
		return nil, f, errs[f]
	}
	return out, -1, nil
}

// jsonDoc is one object as EncodeJSON writes it, without the "---" line and
// the newline: see EncodeJSON.
func jsonDoc(o Object) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(o); err != nil {
		return nil, err
	}
	doc := buf.Bytes()[:buf.Len()-1]
	if !yamlAllowed(doc) {
		doc = escapeForYAML(doc)
	}
	if n := longKey(doc); n > 0 {
		return nil, fmt.Errorf("a mapping key of %d characters as JSON, more than the %d YAML readers accept: %w", n, maxJSONKey, errdef.ErrInvalidInput)
	}
	return doc, nil
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
