package registry

import (
	"context"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/imageref"
)

// tokenRegistry is a TLS registry that asks for a bearer token from its own
// token service, counting new connections and token requests.
func tokenRegistry(t *testing.T) (srv *httptest.Server, conns, tokens *atomic.Int32) {
	conns, tokens = new(atomic.Int32), new(atomic.Int32)
	manifest := `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.empty.v1+json","digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","size":2},"layers":[]}`
	srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/token":
			tokens.Add(1)
			if u, p, ok := r.BasicAuth(); !ok || u != "u" || p != "p" {
				http.Error(w, "bad credentials", http.StatusUnauthorized)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"token":"tok","expires_in":300}`))
		case r.Header.Get("Authorization") != "Bearer tok":
			w.Header().Set("WWW-Authenticate", `Bearer realm="https://`+r.Host+`/token",service="reg",scope="repository:repo:pull"`)
			w.WriteHeader(http.StatusUnauthorized)
		case strings.HasPrefix(r.URL.Path, "/v2/repo/manifests/"):
			w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
			w.Header().Set("Docker-Content-Digest", digest.FromString(manifest).String())
			w.Header().Set("Content-Length", strconv.Itoa(len(manifest)))
			if r.Method == http.MethodGet {
				w.Write([]byte(manifest))
			}
		default:
			http.NotFound(w, r)
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, conns, tokens
}

// Clients of one Shared reuse the connection and the token of the one
// before; clients of their own each connect and ask for a token.
func TestSharedConnectionsAndTokens(t *testing.T) {
	for _, tc := range []struct {
		name                string
		shared              bool
		wantConns, wantToks int32
	}{
		{"shared", true, 1, 1},
		{"own", false, 3, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, conns, tokens := tokenRegistry(t)
			host := strings.TrimPrefix(srv.URL, "https://")
			ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
			var sh *Shared
			if tc.shared {
				sh = &Shared{}
			}
			for range 3 { // three generations, each with a client of its own
				c, err := NewClient(WithoutDockerConfig(), WithCAPEM(ca), WithShared(sh), WithRetries(0),
					WithCredential(host, Credential{Username: "u", Password: "p"}))
				if err != nil {
					t.Fatal(err)
				}
				repo, err := c.Repository(imageref.Reference{Registry: host, Repository: "repo"})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := repo.Resolve(context.Background(), "v1"); err != nil {
					t.Fatal(err)
				}
			}
			if conns.Load() != tc.wantConns || tokens.Load() != tc.wantToks {
				t.Fatalf("%d connections, %d token requests; want %d, %d", conns.Load(), tokens.Load(), tc.wantConns, tc.wantToks)
			}
		})
	}
}
