package errdef_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

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

// Cut shortens to MaxQuoted bytes and never splits a rune (Truncate,
// which it replaces, cut "é" in half and took a length of its own at every
// call).
func TestCut(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"short", "short"},
		{strings.Repeat("a", errdef.MaxQuoted), strings.Repeat("a", errdef.MaxQuoted)},
		{strings.Repeat("a", errdef.MaxQuoted+1), strings.Repeat("a", errdef.MaxQuoted) + "…"},
		{"a" + strings.Repeat("é", 150), "a" + strings.Repeat("é", 99) + "…"}, // 199 bytes: the 100th é would end at 201
		{"", ""},
	} {
		got := errdef.Cut(tc.in)
		if got != tc.want || !utf8.ValidString(got) {
			t.Errorf("Cut(%.20q…) = %.40q…, want %.40q…", tc.in, got, tc.want)
		}
	}
}
