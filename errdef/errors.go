package errdef

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Sentinel errors. Wrap them with fmt.Errorf("…: %w", ErrX) to add detail.
var (
	// ErrNotFound: a component, version, resource or blob does not exist.
	ErrNotFound = errors.New("not found")
	// ErrInvalidDescriptor: a component descriptor (or index, manifest) cannot be decoded.
	ErrInvalidDescriptor = errors.New("invalid component descriptor")
	// ErrInvalidInput: a request, flag, parameter or values file is malformed.
	ErrInvalidInput = errors.New("invalid input")
	// ErrDigestMismatch: bytes do not hash to the digest that names them.
	ErrDigestMismatch = errors.New("digest mismatch")
	// ErrUnsupportedAccess: an access type the plugin cannot read.
	ErrUnsupportedAccess = errors.New("unsupported access type")
	// ErrUnsupportedMediaType: a blob whose media type the plugin cannot render.
	ErrUnsupportedMediaType = errors.New("unsupported media type")
	// ErrUnsafeArchive: an archive entry that would escape its target or is not a plain file.
	ErrUnsafeArchive = errors.New("unsafe archive")
	// ErrLimitExceeded: input larger than a configured limit (size, file count, depth).
	ErrLimitExceeded = errors.New("limit exceeded")
	// ErrRender: a renderer (helm, kustomize, manifests) failed.
	ErrRender = errors.New("render failed")
	// ErrSignature: a required signature is missing or does not verify.
	ErrSignature = errors.New("signature verification failed")
	// ErrNotAllowed: the input asks for what the sidecar's operator does not
	// allow (an image the component does not declare, a platform child
	// leaving its parent's project or destination).
	ErrNotAllowed = errors.New("not allowed")
	// ErrUnauthorized: a registry refused the credentials (or their absence).
	ErrUnauthorized = errors.New("unauthorized")
	// ErrInsecure: a plain-HTTP or unverified-TLS connection that was not allowed.
	ErrInsecure = errors.New("insecure connection refused")
	// ErrForbidden: the sidecar policy does not allow this repository, access or setting.
	ErrForbidden = errors.New("refused by the sidecar policy")
)

// Error carries the context of a failure. Empty fields are left out of the message.
type Error struct {
	Application string // Argo CD Application name, when known
	Component   string
	Version     string
	Resource    string // resource identity, e.g. "chart" or "chart[platform=linux]"
	Err         error
}

// Error renders one line: "application X: component C:V: resource R: cause".
func (e *Error) Error() string {
	var b strings.Builder
	// The fields are often a tenant's input (parameters of an Application):
	// Argo CD stores this line in the Application's status and in Redis.
	if e.Application != "" {
		b.WriteString("application ")
		b.WriteString(Field(e.Application))
		b.WriteString(": ")
	}
	if e.Component != "" {
		b.WriteString("component ")
		b.WriteString(Field(e.Component))
		if e.Version != "" {
			b.WriteString(":")
			b.WriteString(Field(e.Version))
		}
		b.WriteString(": ")
	} else if e.Version != "" {
		b.WriteString("version ")
		b.WriteString(Field(e.Version))
		b.WriteString(": ")
	}
	if e.Resource != "" {
		b.WriteString("resource ")
		b.WriteString(Field(e.Resource))
		b.WriteString(": ")
	}
	b.WriteString(e.cause())
	return b.String()
}

// cause is the message without the context fields.
func (e *Error) cause() string {
	if e.Err == nil {
		return "unknown error"
	}
	return OneLine(e.Err.Error())
}

func (e *Error) Unwrap() error { return e.Err }

// Wrap adds context to err, filling only the fields that an inner *Error does not
// already set, so the innermost (most specific) context wins. Text that was
// added around an inner *Error ("reading chart: %w") is kept, after the
// context fields: "component C:V: resource R: reading chart: cause". nil
// stays nil.
func Wrap(err error, ctx Error) error {
	if err == nil {
		return nil
	}
	var inner *Error
	if errors.As(err, &inner) {
		out := *inner
		if err != error(inner) {
			out.Err = &between{outer: err, inner: inner}
		}
		if out.Application == "" {
			out.Application = ctx.Application
		}
		if out.Component == "" {
			out.Component, out.Version = ctx.Component, ctx.Version
		}
		if out.Resource == "" && out.Component == ctx.Component {
			out.Resource = ctx.Resource
		}
		return &out
	}
	ctx.Err = err
	return &ctx
}

// between is an error that wraps an *Error with added text: its message is
// the outer message with the inner context fields taken out (Wrap hoists
// them to the front); errors.Is and errors.As see the whole outer chain.
type between struct {
	outer error
	inner *Error
}

func (b *between) Error() string {
	msg := b.outer.Error()
	if full := b.inner.Error(); strings.Contains(msg, full) {
		return strings.Replace(msg, full, b.inner.cause(), 1)
	}
	return msg
}

func (b *between) Unwrap() error { return b.outer }

// OneLine folds multi-line text (Helm, YAML and kustomize errors have it) so a
// message stays one line in Argo CD's UI and in logs: lines are trimmed, blank
// ones dropped, and the rest joined with "; " (with " " after a line that ends
// in ":"). Runs of spaces inside a line are kept.
func OneLine(s string) string {
	s = strings.TrimSpace(s)
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	var b strings.Builder
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }) {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if b.Len() > 0 {
			if strings.HasSuffix(b.String(), ":") {
				b.WriteString(" ")
			} else {
				b.WriteString("; ")
			}
		}
		b.WriteString(f)
	}
	return b.String()
}

// Mark classifies err as sentinel: err itself when it already is one (so a
// message never reads "invalid input: invalid input: …"), else sentinel
// wrapped around it, keeping err's own chain for errors.Is and errors.As.
// nil stays nil.
func Mark(sentinel, err error) error {
	if err == nil || errors.Is(err, sentinel) {
		return err
	}
	return fmt.Errorf("%w: %w", sentinel, err)
}

// MaxQuoted caps every piece of untrusted input an error message quotes
// (docs/security.md promises it): Argo CD stores the error line in the
// Application's status, in Redis and shows it in the UI.
const MaxQuoted = 200

// Quote is the one way a message quotes input (a parameter, a key, an
// expression, a path, a name, a version): %q of s, cut to MaxQuoted bytes
// on a rune boundary with its size when it was longer, e.g.
// "aaaa…" (90000 bytes), so that one overlong input cannot flood the
// error line. Short input reads exactly as %q writes it.
func Quote(s string) string {
	if len(s) <= MaxQuoted {
		return strconv.Quote(s)
	}
	return strconv.Quote(Cut(s)) + " (" + strconv.Itoa(len(s)) + " bytes)"
}

// Cut is s cut to MaxQuoted bytes on a rune boundary, with "…" after it
// when it was longer: for input shown without quotes (a report, a log
// attribute). A message quotes input with Quote.
func Cut(s string) string { return cutAt(s, MaxQuoted) }

// MaxMessage bounds foreign text kept whole in an error: the message of a
// registry, of a generator's request (each quoted input in it is capped
// at MaxQuoted already).
const MaxMessage = 2 * MaxQuoted

// CutMessage is s cut to MaxMessage bytes as Cut cuts.
func CutMessage(s string) string { return cutAt(s, MaxMessage) }

func cutAt(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// Field is s as a message names a component, version or resource: as it
// is when it is short and printable (the common case reads unquoted),
// else Quote(s).
func Field(s string) string {
	if len(s) > MaxQuoted {
		return Quote(s)
	}
	for _, r := range s {
		if !Printable(r) {
			return Quote(s)
		}
	}
	return s
}

// Printable reports whether Quote shows r as it is (strconv.IsPrint) and
// r is not utf8.RuneError, which is also what ranging over invalid UTF-8
// yields. The others (C0 and C1 controls, DEL, U+2028 and U+2029, bidi
// and other format characters, spaces but ' ') could break or reorder
// the one line of an error message; foreign text shown unquoted replaces
// them.
func Printable(r rune) bool { return r != utf8.RuneError && strconv.IsPrint(r) }
