package generator_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/generator"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// The HTTP contract, hostile input included: every failure is a JSON error
// object with its status, never a 500, a stack or a quoted secret.
func TestHTTPContract(t *testing.T) {
	f := newFixture(t)
	url := serve(t, f.generator(t, generator.Options{}))
	good := fmt.Sprintf(`{"applicationSetName":"shop","input":{"parameters":{"repository":%q,"component":%q,"version":"~2.3"}}}`, f.repo, podinfo)
	body := func(params string) string {
		return `{"applicationSetName":"shop","input":{"parameters":{"repository":"` + f.repo + `","component":"` + podinfo + `"` + params + `}}}`
	}
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)

	tests := []struct {
		name   string
		token  string
		body   string
		status int
		want   string // in the message
	}{
		{"good", testToken, good, 200, ""},
		{"no token", "", good, 403, "token"},
		{"wrong token", "wrong-token-0123456789", good, 403, "token"},
		{"token prefix", testToken[:10], good, 403, "token"},
		{"token with suffix", testToken + "x", good, 403, "token"},
		{"unknown parameter", testToken, body(`,"versions":"1"`), 400, `unknown parameter "versions"`},
		{"repository not a string", testToken, `{"input":{"parameters":{"repository":1,"component":"a/b"}}}`, 400, "parameter repository: want a string, got a number"},
		{"missing repository", testToken, `{"input":{"parameters":{"component":"a/b"}}}`, 400, "parameter repository is required"},
		{"missing component", testToken, `{"input":{"parameters":{"repository":"` + f.repo + `"}}}`, 400, "parameter component is required"},
		{"latest not a number", testToken, body(`,"latest":"3"`), 400, "parameter latest: want a whole number"},
		{"latest negative", testToken, body(`,"latest":-1`), 400, "parameter latest"},
		{"latest fraction", testToken, body(`,"latest":1.5`), 400, "parameter latest"},
		{"latest huge", testToken, body(`,"latest":1e99`), 400, "parameter latest"},
		{"references not a boolean", testToken, body(`,"references":"yes"`), 400, "parameter references: want a boolean, got a string"},
		{"labels object", testToken, body(`,"labels":{"a":1}`), 400, "parameter labels: want a boolean or an array of strings, got an object"},
		{"signature number", testToken, body(`,"signature":7`), 400, "parameter signature"},
		{"unknown signature key", testToken, body(`,"signature":"nobody"`), 400, `no key for signature "nobody"`},
		{"bad constraint", testToken, body(`,"version":">=1.0 <<2"`), 400, "not a semver constraint"},
		{"bad semverFilter", testToken, body(`,"semverFilter":"(["`), 400, "parameter semverFilter"},
		{"no match", testToken, body(`,"version":"~9"`), 400, `no version of example.org/apps/podinfo matches "~9" (available: `},
		{"unknown component", testToken, `{"input":{"parameters":{"repository":"` + f.repo + `","component":"example.org/apps/nope"}}}`, 400, "not found"},
		{"bad component", testToken, `{"input":{"parameters":{"repository":"` + f.repo + `","component":"../x"}}}`, 400, "parameter component"},
		{"wildcard inside", testToken, `{"input":{"parameters":{"repository":"` + f.repo + `","component":"a/*/b"}}}`, 400, "parameter component"},
		{"bad repository", testToken, `{"input":{"parameters":{"repository":"ftp://x","component":"a/b"}}}`, 400, "unsupported scheme"},
		{"credentials in repository", testToken, `{"input":{"parameters":{"repository":"https://u:p@ghcr.io/x","component":"a/b"}}}`, 400, "must not carry credentials"},
		{"parameters not an object", testToken, `{"input":{"parameters":[1]}}`, 400, "input.parameters must be an object"},
		{"input not an object", testToken, `{"input":"x"}`, 400, "input must be an object"},
		{"malformed JSON", testToken, `{"input":`, 400, "empty or truncated body"},
		{"trailing data", testToken, good + `{}`, 400, "data after the request object"},
		{"deep JSON", testToken, `{"input":{"parameters":{"repository":` + deep + `}}}`, 400, ""},
		{"empty body", testToken, ``, 400, "empty or truncated"},
		{"body too large", testToken, `{"applicationSetName":"` + strings.Repeat("a", generator.DefaultMaxBodyBytes) + `"}`, 413, "larger than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := post(t, url, tc.token, []byte(tc.body))
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if tc.status == 200 {
				if ps := r.params(t); len(ps) != 1 || ps[0]["version"] != "2.3.1" {
					t.Errorf("parameters %v", ps)
				}
				return
			}
			msg := r.message(t)
			if !strings.Contains(msg, tc.want) {
				t.Errorf("message %q does not say %q", msg, tc.want)
			}
			if strings.Contains(string(r.body), testToken) || strings.Contains(msg, "goroutine") {
				t.Errorf("body leaks: %s", r.body)
			}
		})
	}

	t.Run("methods and paths", func(t *testing.T) {
		for _, c := range []struct {
			method, path string
			status       int
		}{
			{"GET", generator.PathGetParams, 405},
			{"GET", "/api/v1/other", 404},
			{"GET", generator.PathHealth, 200},
			{"POST", generator.PathHealth, 405},
		} {
			req, _ := http.NewRequest(c.method, url+c.path, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Errorf("%s %s: %d, want %d", c.method, c.path, resp.StatusCode, c.status)
			}
		}
	})
	t.Run("baseUrl with a path", func(t *testing.T) {
		if r := post(t, url+"/generators/ocm", testToken, []byte(good)); r.status != 200 {
			t.Errorf("%d %s", r.status, r.body)
		}
	})
	t.Run("wrong scheme", func(t *testing.T) {
		req, _ := http.NewRequest("POST", url+generator.PathGetParams, strings.NewReader(good))
		req.Header.Set("Authorization", "Basic "+testToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 403 {
			t.Errorf("basic auth: %d", resp.StatusCode)
		}
	})
}

// A client that sends its headers or body too slowly is cut off; the
// server keeps serving others.
func TestSlowClient(t *testing.T) {
	url := serve(t, (*fixture)(nil).generator(t, generator.Options{}), func(s *http.Server) {
		s.ReadHeaderTimeout, s.ReadTimeout = 200*time.Millisecond, 300*time.Millisecond
	})
	addr := strings.TrimPrefix(url, "http://")
	for _, tc := range []struct {
		name string
		head string
	}{
		{"headers", "POST " + generator.PathGetParams + " HTTP/1.1\r\nHost: x\r\n"},
		{"body", "POST " + generator.PathGetParams + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + testToken + "\r\nContent-Length: 1000\r\n\r\n{"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := io.WriteString(c, tc.head); err != nil {
				t.Fatal(err)
			}
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			start := time.Now()
			// The server answers (408 or 400) and closes, or just closes.
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 200 {
					t.Fatalf("slow client served")
				}
				_, err = c.Read(make([]byte, 1))
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("the server kept a slow client's connection open")
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("cut off after %s", d)
			}
		})
	}
	r := call(t, url, map[string]any{"repository": "ftp://x", "component": "a/b"})
	if r.status != 400 {
		t.Errorf("after slow clients: %d", r.status)
	}
}

// A request waits for a turn until its deadline, then gets 503; the
// deadline of a slow repository is 504.
func TestConcurrencyAndDeadline(t *testing.T) {
	block := make(chan struct{})
	var opened = make(chan struct{}, 10)
	slow := func(ctx context.Context, spec string) (ocm.Repository, error) {
		opened <- struct{}{}
		<-block // a repository that answers late, whatever the deadline
		<-ctx.Done()
		return nil, ctx.Err()
	}
	g := (*fixture)(nil).generator(t, generator.Options{Open: slow})
	tok := []byte(testToken)
	h := &generator.Handler{Generator: g, Token: func() ([]byte, error) { return tok, nil }, MaxConcurrent: 1, RequestTimeout: 300 * time.Millisecond}
	srv := generator.NewServer("", h)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	url := "http://" + l.Addr().String()
	p := map[string]any{"repository": "registry.example.org/ocm", "component": "a/b"}
	first := make(chan response, 1)
	go func() { first <- call(t, url, p) }()
	<-opened
	// Another ApplicationSet's request waits in line (one of the same
	// ApplicationSet would be refused at once: TestOneTurnPerApplicationSet).
	second, hdr := callAs(url, "other", p)
	if second.status != http.StatusServiceUnavailable || !strings.Contains(second.message(t), "busy: no turn within") || hdr.Get("Retry-After") != "1" {
		t.Errorf("second request: %d %s (Retry-After %q)", second.status, second.body, hdr.Get("Retry-After"))
	}
	close(block)
	if r := <-first; r.status != http.StatusGatewayTimeout {
		t.Errorf("first request: %d %s", r.status, r.body)
	}
}

// The token file: read at start, read again when it changes, never a
// fallback to the old token, short tokens refused.
func TestTokenFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "token")
	write := func(s string) {
		// As the kubelet does: a new file renamed over the old.
		tmp := filepath.Join(dir, ".tmp")
		if err := os.WriteFile(tmp, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, p); err != nil {
			t.Fatal(err)
		}
	}
	tf := &generator.TokenFile{Path: p, CheckInterval: time.Nanosecond}
	if err := tf.Load(); err == nil {
		t.Fatal("missing token file accepted")
	}
	write("first-token-0123456789\n")
	if err := tf.Load(); err != nil {
		t.Fatal(err)
	}
	if b, err := tf.Token(); err != nil || string(b) != "first-token-0123456789" {
		t.Fatalf("token %q, %v", b, err)
	}
	write("second-token-0123456789")
	if b, err := tf.Token(); err != nil || string(b) != "second-token-0123456789" {
		t.Errorf("rotated token %q, %v", b, err)
	}
	write("short")
	if b, err := tf.Token(); err == nil || b != nil || strings.Contains(err.Error(), "short") {
		t.Errorf("short token: %q, %v", b, err)
	}
	os.Remove(p)
	if _, err := tf.Token(); err == nil {
		t.Error("removed token file still accepted")
	}

	// Through the handler: the rotated token is the only one.
	write("first-token-0123456789")
	h := &generator.Handler{Generator: (*fixture)(nil).generator(t, generator.Options{}), Token: tf.Token}
	srv := generator.NewServer("", h)
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	url := "http://" + l.Addr().String()
	b := []byte(`{"input":{"parameters":{}}}`)
	if r := post(t, url, "first-token-0123456789", b); r.status != 400 {
		t.Errorf("first token: %d", r.status)
	}
	write("second-token-0123456789")
	if r := post(t, url, "first-token-0123456789", b); r.status != 403 {
		t.Errorf("old token after rotation: %d", r.status)
	}
	if r := post(t, url, "second-token-0123456789", b); r.status != 400 {
		t.Errorf("new token: %d", r.status)
	}
}
