// Command testsummary reads `go test -json` on stdin and prints what a
// person wants from a long test run: go test's own package lines as they
// come (ok, FAIL, and the output of failed tests), then every skipped test
// with its reason, tests whose subtests all skipped, and one closing line
// "N passed, N failed, N skipped". It exits 1 when a test or a package
// failed, so that `make test` fails with it.
//
//	go test -json ./... | go run ./hack/testsummary
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

type testKey struct{ pkg, test string }

func main() {
	os.Exit(run(os.Stdin, os.Stdout))
}

func run(in io.Reader, out io.Writer) int {
	output := map[testKey][]string{} // a test's output, kept until it ends
	result := map[testKey]string{}   // pass, fail, skip of every test and subtest
	var failedPkgs []string
	var order []testKey
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			// Not an event (a build error printed by go itself): show it.
			fmt.Fprintln(out, sc.Text())
			continue
		}
		k := testKey{e.Package, e.Test}
		switch e.Action {
		case "output":
			if e.Test == "" {
				// Package-level lines: go test's own summary ("ok", "FAIL",
				// "--- FAIL" echoes) and what TestMain prints.
				if s := strings.TrimRight(e.Output, "\n"); packageLine(s) {
					fmt.Fprintln(out, s)
				}
				continue
			}
			output[k] = append(output[k], e.Output)
		case "run":
			order = append(order, k)
		case "pass", "fail", "skip":
			if e.Test == "" {
				if e.Action == "fail" {
					failedPkgs = append(failedPkgs, e.Package)
				}
				continue
			}
			result[k] = e.Action
			if e.Action == "fail" {
				for _, l := range output[k] {
					fmt.Fprint(out, l)
				}
			}
			if e.Action != "skip" {
				delete(output, k)
			}
		}
	}
	// Skips, with the reason the test gave (its last line of output).
	var skipped []string
	passed, failed, skips := 0, 0, 0
	parents := map[testKey][2]int{} // subtests: [skipped, all]
	for _, k := range order {
		r := result[k]
		switch r {
		case "pass":
			passed++
		case "fail":
			failed++
		case "skip":
			skips++
			skipped = append(skipped, fmt.Sprintf("  %s %s: %s", short(k.pkg), k.test, reason(output[k])))
		}
		if i := strings.LastIndex(k.test, "/"); i > 0 {
			p := testKey{k.pkg, k.test[:i]}
			c := parents[p]
			c[1]++
			if r == "skip" {
				c[0]++
			}
			parents[p] = c
		}
	}
	var hollow []string
	for p, c := range parents {
		if c[0] == c[1] && result[p] == "pass" {
			hollow = append(hollow, fmt.Sprintf("  %s %s: all %d subtests skipped", short(p.pkg), p.test, c[1]))
		}
	}
	sort.Strings(hollow)
	if len(skipped) > 0 || len(hollow) > 0 {
		fmt.Fprintf(out, "\nSKIPPED (%d):\n", len(skipped))
		for _, s := range skipped {
			fmt.Fprintln(out, s)
		}
		for _, s := range hollow {
			fmt.Fprintln(out, s)
		}
	}
	for _, p := range failedPkgs {
		fmt.Fprintf(out, "FAILED package %s\n", p)
	}
	fmt.Fprintf(out, "\ntests: %d passed, %d failed, %d skipped\n", passed, failed, skips)
	if failed > 0 || len(failedPkgs) > 0 {
		return 1
	}
	return 0
}

func packageLine(s string) bool {
	for _, p := range []string{"ok ", "ok\t", "FAIL", "?   \t", "panic:", "# "} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// reason is the last non-empty output line of a skipped test, without the
// "--- SKIP" line and the file:line prefix.
func reason(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "--- SKIP") || strings.HasPrefix(l, "=== ") {
			continue
		}
		if _, rest, ok := strings.Cut(l, ".go:"); ok {
			if _, msg, ok := strings.Cut(rest, ": "); ok {
				return msg
			}
		}
		return l
	}
	return "(no reason given)"
}

func short(pkg string) string {
	return strings.TrimPrefix(pkg, "github.com/argocd-ocm-plugin/argocd-ocm-plugin/")
}
