package transfer_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/transfer"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/registry"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
)

// A target that could not be read is not a conflict: a closed port, plain
// HTTP against TLS and back, refused credentials and a timeout say what
// happened, and nothing invites deleting tags. (They read "conflict: … holds
// something this transfer cannot read" before.)
func TestUnreachableTargetIsNoConflict(t *testing.T) {
	closed := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		return addr
	}()
	plain := registrytest.Start(t)
	tlsReg := registrytest.Start(t, registrytest.WithTLS())
	authReg := registrytest.Start(t, registrytest.WithBasicAuth("ci", "s3cret"))
	// Accepts and never answers: the transfer's deadline ends the wait.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { silent.Close() })
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			go func() { <-done; c.Close() }()
		}
	}()

	for _, tc := range []struct {
		name, to string
		opts     []registry.Option
		timeout  time.Duration
		kind     error
		mentions string
	}{
		{"closed port", "http://" + closed + "/ocm", nil, 0, nil, "no OCI registry answered"},
		{"https to a plain-HTTP registry", plain.Host + "/ocm", nil, 0, errdef.ErrInsecure, "no OCI registry answered"},
		{"http to a TLS registry", "http://" + tlsReg.Host + "/ocm", nil, 0, nil, "HTTP 400"},
		{"refused credentials", "http://" + authReg.Host + "/ocm",
			[]registry.Option{registry.WithCredential(authReg.Host, registry.Credential{Username: "ci", Password: "wrong"})}, 0, errdef.ErrUnauthorized, "unauthorized"},
		{"timeout", "http://" + silent.Addr().String() + "/ocm", nil, 300 * time.Millisecond, context.DeadlineExceeded, "timed out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.timeout)
				defer cancel()
			}
			tr := &transfer.Transfer{From: fixtureDir(t, "ctf"), To: tc.to, Component: "example.com/fixtures/kustomize-app", Version: "1.0.0",
				RegistryOptions: clientOptions(tc.opts...), TempDir: t.TempDir()}
			_, err := tr.Run(ctx)
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if errors.Is(err, errdef.ErrConflict) || strings.Contains(msg, "conflict") || strings.Contains(msg, "cannot read") {
				t.Fatalf("reported as a conflict: %v", err)
			}
			if tc.kind != nil && !errors.Is(err, tc.kind) {
				t.Errorf("err %v is not %v", err, tc.kind)
			}
			if !strings.Contains(msg, tc.mentions) || !strings.Contains(msg, "component example.com/fixtures/kustomize-app:1.0.0") ||
				strings.Contains(msg, "\n") || strings.Contains(msg, "wrong") {
				t.Errorf("err %q: want one line naming the version and %q, no credentials", msg, tc.mentions)
			}
		})
	}
}
