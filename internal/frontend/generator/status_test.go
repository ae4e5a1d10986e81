package generator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

// The status of each kind of failure: what the request can change is 400,
// no turn 503, the deadline 504, the registry's or network's fault 502.
func TestStatus4(t *testing.T) {
	live := context.Background()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	wrap := func(err error) error { return fmt.Errorf("component a/b:1.0.0: %w", err) }
	for _, tc := range []struct {
		name   string
		ctx    context.Context
		err    error
		status int
	}{
		{"invalid input", live, wrap(errdef.ErrInvalidInput), 400},
		{"not found", live, wrap(errdef.ErrNotFound), 400},
		{"limit", live, wrap(errdef.ErrLimitExceeded), 400},
		{"the entries cap", live, errTooMany, 400},
		{"the lookups cap", live, errTooManyLookups, 400},
		{"policy", live, wrap(errdef.ErrForbidden), 400},
		{"not allowed", live, wrap(errdef.ErrNotAllowed), 400},
		{"plain HTTP refused", live, wrap(errdef.ErrInsecure), 400},
		{"reference cycle", live, fmt.Errorf("%w: a:1 -> b:1 -> a:1", errCycle), 400},
		{"request fault at the deadline", done, wrap(errdef.ErrNotFound), 400},
		{"busy", live, fmt.Errorf("%w: no turn", errBusy), 503},
		{"busy at the deadline", done, fmt.Errorf("%w: no turn", errBusy), 503},
		{"deadline", live, wrap(context.DeadlineExceeded), 504},
		{"context ended", done, wrap(context.Canceled), 504},
		{"registry failure at the deadline", done, errors.New("connection reset"), 504},
		{"registry failure", live, errors.New("registry answered 500"), 502},
		{"registry refused credentials", live, wrap(errdef.ErrUnauthorized), 502},
		{"bad descriptor", live, wrap(errdef.ErrInvalidDescriptor), 502},
		{"digest mismatch", live, wrap(errdef.ErrDigestMismatch), 502},
	} {
		if got := status4(tc.ctx, tc.err); got != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.name, got, http.StatusText(got), tc.status)
		}
	}
}

// dnsName replaces runs of [^a-z0-9-] as the regexp it replaced did.
func TestDNSNameAsRegexp(t *testing.T) {
	re := regexp.MustCompile(`[^a-z0-9-]+`)
	for _, s := range []string{"", "PodInfo", "1.2.0+build.7", "a-.b", "--x__y--", "ÄÖü€x", "a\xffb", "idp-frontend-2.3.1", strings.Repeat("Ab.", 40)} {
		want := strings.Trim(re.ReplaceAllString(strings.ToLower(s), "-"), "-")
		if len(want) > maxDNSLabel || want == "" {
			continue // hashed or "x": the same code after the replacement
		}
		if got := dnsName(s); got != want {
			t.Errorf("dnsName(%q) = %q, want %q", s, got, want)
		}
	}
}
