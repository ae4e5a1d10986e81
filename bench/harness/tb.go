package main

import (
	"fmt"
	"os"
	"testing"
)

// harnessTB lets the harness use the test helpers of internal/testsupport/registrytest
// (which take a testing.TB) outside `go test`. Only the methods those helpers
// call are implemented; the embedded nil interface satisfies the rest of the
// method set and would panic if one of them were ever called.
type harnessTB struct {
	testing.TB
	cleanups []func()
	tmp      string
}

func (t *harnessTB) Helper()                 {}
func (t *harnessTB) Name() string            { return "bench" }
func (t *harnessTB) Cleanup(f func())        { t.cleanups = append(t.cleanups, f) }
func (t *harnessTB) Logf(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }
func (t *harnessTB) Log(a ...any)            { fmt.Fprintln(os.Stderr, a...) }
func (t *harnessTB) Errorf(f string, a ...any) {
	t.Fatalf(f, a...)
}
func (t *harnessTB) Fatal(a ...any) { t.fail(fmt.Sprint(a...)) }
func (t *harnessTB) Fatalf(f string, a ...any) {
	t.fail(fmt.Sprintf(f, a...))
}
func (t *harnessTB) Skipf(f string, a ...any) { t.fail("skip: " + fmt.Sprintf(f, a...)) }
func (t *harnessTB) TempDir() string {
	d, err := os.MkdirTemp(t.tmp, "tb-*")
	if err != nil {
		t.fail(err.Error())
	}
	return d
}

func (t *harnessTB) fail(msg string) {
	t.close()
	fmt.Fprintln(os.Stderr, "bench: "+msg)
	os.Exit(1)
}

// close runs the cleanups, last registered first.
func (t *harnessTB) close() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
	t.cleanups = nil
}
