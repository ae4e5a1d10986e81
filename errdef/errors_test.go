package errdef_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

func TestErrorMessage(t *testing.T) {
	cause := fmt.Errorf("%w: chart catalog:\n  - at '/image/tag':\n got number", errdef.ErrRender)
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&errdef.Error{Application: "shop", Component: "example.com/a", Version: "1.0.0", Resource: "chart", Err: cause},
			"application shop: component example.com/a:1.0.0: resource chart: render failed: chart catalog: - at '/image/tag': got number"},
		{&errdef.Error{Version: "1.0.0", Err: errdef.ErrNotFound}, "version 1.0.0: not found"},
		{&errdef.Error{}, "unknown error"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("got  %q\nwant %q", got, tc.want)
		}
	}
}

func TestWrapKeepsInnermostContext(t *testing.T) {
	inner := errdef.Wrap(errdef.ErrDigestMismatch, errdef.Error{Component: "example.com/child", Version: "2.0.0", Resource: "chart"})
	outer := errdef.Wrap(inner, errdef.Error{Application: "shop", Component: "example.com/platform", Version: "1.0.0", Resource: "ref"})
	var e *errdef.Error
	if !errors.As(outer, &e) {
		t.Fatal("not an *Error")
	}
	if e.Application != "shop" || e.Component != "example.com/child" || e.Version != "2.0.0" || e.Resource != "chart" {
		t.Fatalf("context %+v", e)
	}
	if !errors.Is(outer, errdef.ErrDigestMismatch) {
		t.Fatal("sentinel lost")
	}
	if errdef.Wrap(nil, errdef.Error{}) != nil {
		t.Fatal("nil must stay nil")
	}
}

// A cause that already is invalid input is not marked twice (the message of
// a bad -f or --set read "invalid input: invalid input: …").
func TestMarkDoesNotRepeatTheSentinel(t *testing.T) {
	inner := fmt.Errorf("%w: --set a[=b: error parsing index", errdef.ErrInvalidInput)
	if got := errdef.Mark(errdef.ErrInvalidInput, inner).Error(); got != "invalid input: --set a[=b: error parsing index" {
		t.Errorf("got %q", got)
	}
	plain := errors.New("open x: no such file")
	m := errdef.Mark(errdef.ErrInvalidInput, plain)
	if m.Error() != "invalid input: open x: no such file" || !errors.Is(m, errdef.ErrInvalidInput) || !errors.Is(m, plain) {
		t.Errorf("got %q", m)
	}
	if errdef.Mark(errdef.ErrInvalidInput, nil) != nil {
		t.Error("nil must stay nil")
	}
}

// Text added between two wrapped errors ("reading chart: %w") stays in the
// message, after the hoisted context, and the chain stays whole.
func TestWrapKeepsContextBetweenWrappedErrors(t *testing.T) {
	cause := fmt.Errorf("blob sha256:ab: %w", errdef.ErrDigestMismatch)
	inner := errdef.Wrap(cause, errdef.Error{Component: "example.com/child", Version: "2.0.0", Resource: "chart"})
	between := fmt.Errorf("reference child: %w", inner)
	outer := errdef.Wrap(between, errdef.Error{Application: "shop", Component: "example.com/platform", Version: "1.0.0"})
	want := "application shop: component example.com/child:2.0.0: resource chart: reference child: blob sha256:ab: digest mismatch"
	if got := outer.Error(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if !errors.Is(outer, errdef.ErrDigestMismatch) {
		t.Error("sentinel lost")
	}
	var e *errdef.Error
	if !errors.As(outer, &e) || e.Application != "shop" || e.Component != "example.com/child" {
		t.Errorf("context %+v", e)
	}
	// Wrapped once more, directly: nothing is repeated or lost.
	again := errdef.Wrap(outer, errdef.Error{Application: "other"})
	if got := again.Error(); got != want {
		t.Errorf("wrapped again: got  %q\nwant %q", got, want)
	}
}

func TestOneLine(t *testing.T) {
	for in, want := range map[string]string{
		"one line":                    "one line",
		"  padded  ":                  "padded",
		"error:\n  - at '/a':\n  bad": "error: - at '/a': bad",
		"first\r\n\r\nsecond":         "first; second",
	} {
		if got := errdef.OneLine(in); got != want {
			t.Errorf("OneLine(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"a secret-looking long value", 8, "a secret…"},
		{"", 0, ""},
	} {
		if got := errdef.Truncate(tc.in, tc.n); got != tc.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
