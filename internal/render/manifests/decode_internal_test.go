package manifests

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
)

func testDocs(n, size int) []yamlDoc {
	docs := make([]yamlDoc, n)
	for i := range docs {
		docs[i] = yamlDoc{data: []byte(strings.Repeat("#", size)), line: i + 1}
	}
	return docs
}

// TestDecodeDocsParallel: a stream large enough is decoded by several
// goroutines; the results are in document order, and documents after the
// first failure are not decoded once it is known.
func TestDecodeDocsParallel(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	}
	docs := testDocs(200, 1024)
	var calls atomic.Int64
	res := decodeDocs("s", docs, func(name string, i int, doc yamlDoc) ([]Object, error) {
		calls.Add(1)
		return []Object{{"i": i, "line": doc.line}}, nil
	})
	if calls.Load() != 200 {
		t.Fatalf("%d documents decoded, want 200", calls.Load())
	}
	for i, r := range res {
		if r.err != nil || len(r.objs) != 1 || r.objs[0]["i"] != i || r.objs[0]["line"] != i+1 {
			t.Fatalf("result %d = %v", i, r)
		}
	}

	calls.Store(0)
	failAt := errors.New("fail")
	res = decodeDocs("s", docs, func(name string, i int, doc yamlDoc) ([]Object, error) {
		calls.Add(1)
		if i >= 20 {
			return nil, fmt.Errorf("%d: %w", i, failAt)
		}
		return []Object{{}}, nil
	})
	for i := range 20 {
		if res[i].err != nil || len(res[i].objs) != 1 {
			t.Fatalf("result %d = %v, want an object", i, res[i])
		}
	}
	if res[20].err == nil || res[20].err.Error() != "20: fail" {
		t.Errorf("result 20 = %v, want its error", res[20])
	}
	if n := calls.Load(); n == 200 {
		t.Errorf("all %d documents decoded after document 20 failed", n)
	}
}

// TestDecodeDocsPanic: a panic while decoding a document reaches the
// caller's goroutine, where a recover (the render server's) catches it.
func TestDecodeDocsPanic(t *testing.T) {
	for _, n := range []int{1, 200} { // one after the other, in parallel
		got := func() (p any) {
			defer func() { p = recover() }()
			decodeDocs("s", testDocs(n, 1024), func(name string, i int, doc yamlDoc) ([]Object, error) {
				if i == n-1 {
					panic("boom")
				}
				return nil, nil
			})
			return nil
		}()
		if got != "boom" {
			t.Errorf("%d documents: recovered %v, want the panic", n, got)
		}
	}
}

// TestDecodeDocsSmall: small streams are decoded in the caller's goroutine,
// one document after the other, stopping at the first error.
func TestDecodeDocsSmall(t *testing.T) {
	for _, docs := range [][]yamlDoc{testDocs(parallelMinDocs-1, parallelMinBytes), testDocs(100, parallelMinBytes/100-1)} {
		var order []int
		decodeDocs("s", docs, func(name string, i int, doc yamlDoc) ([]Object, error) {
			order = append(order, i) // no lock: a race if this ran in several goroutines
			if i == 2 {
				return nil, errors.New("fail")
			}
			return nil, nil
		})
		if fmt.Sprint(order) != "[0 1 2]" {
			t.Errorf("%d documents: decoded %v, want [0 1 2]", len(docs), order)
		}
	}
}

// TestPlainLine: plainLine is the check it replaced, on lines with ':',
// '#' and spaces in every position.
func TestPlainLine(t *testing.T) {
	was := func(s string) bool {
		return !strings.Contains(s, ": ") && !strings.HasSuffix(s, ":") && !strings.Contains(s, " #")
	}
	alphabet := []byte{':', '#', ' ', 'a'}
	var lines []string
	var gen func(prefix []byte)
	gen = func(prefix []byte) {
		lines = append(lines, string(prefix))
		if len(prefix) == 5 {
			return
		}
		for _, c := range alphabet {
			gen(append(prefix, c))
		}
	}
	gen(nil)
	lines = append(lines, "a description: long", "see https://example.com/#anchor", "ends with a colon:", "a #comment", "x:y#z")
	for _, l := range lines {
		if got, want := plainLine(l), was(l); got != want {
			t.Errorf("plainLine(%q) = %v, want %v", l, got, want)
		}
	}
}
