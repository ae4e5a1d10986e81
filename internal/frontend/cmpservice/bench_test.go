package cmpservice

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/server"
)

// BenchmarkProtocolRoundTrip is what Argo CD's plugin protocol costs a
// generation before the plugin renders anything (issue 40's floor
// comparison): a connection per generation, as the repo-server makes, the
// Application's directory (three values files: side by side, or two
// directories deep as the bench's values cases) packed and streamed,
// unpacked into a stream directory, and five manifests (~6 KB, podinfo's)
// sent back, by a runner that answers at once. Client and service share
// this process.
//
//	go test -run '^$' -bench ProtocolRoundTrip ./internal/frontend/cmpservice
func BenchmarkProtocolRoundTrip(b *testing.B) {
	var out strings.Builder
	for range 5 {
		out.WriteString("---\n{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"data\":\"" + strings.Repeat("x", 1200) + "\"}\n")
	}
	for _, layout := range []struct {
		name  string
		files []string
	}{
		{"flat", []string{"values.yaml", "values-prod.yaml", "values-dev.yaml"}},
		{"nested", []string{"values.yaml", "env/prod/values.yaml", "env/dev/values.yaml"}},
	} {
		b.Run(layout.name, func(b *testing.B) {
			_, work, _ := startService(b, &fixed{res: &server.Result{Stdout: []byte(out.String())}})
			socket := filepath.Join(filepath.Dir(work), "p.sock")
			app := b.TempDir()
			for _, name := range layout.files {
				if err := os.MkdirAll(filepath.Join(app, filepath.Dir(name)), 0o700); err != nil {
					b.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(app, name), []byte(strings.Repeat("key: value\n", 40)), 0o600); err != nil {
					b.Fatal(err)
				}
			}
			env := []string{"ARGOCD_APP_NAME=shop", "ARGOCD_ENV_COMPONENT=c"}
			for b.Loop() {
				c, err := Dial(socket)
				if err != nil {
					b.Fatal(err)
				}
				ms, err := c.Generate(context.Background(), app, env)
				c.Close()
				if err != nil || len(ms) != 5 {
					b.Fatalf("%d manifests, %v", len(ms), err)
				}
			}
		})
	}
}

// fixed answers every request with res.
type fixed struct{ res *server.Result }

func (f *fixed) Run(context.Context, *server.Request) *server.Result { return f.res }

// BenchmarkReceiveLargeStream is receiving and unpacking a 38 MiB
// incompressible file (an offline CTF archive committed beside the
// Application) in the repo-server's default 1 KiB chunks, without gRPC.
func BenchmarkReceiveLargeStream(b *testing.B) {
	src := b.TempDir()
	data := make([]byte, 38<<20)
	if _, err := rand.Read(data); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "ctf.tgz"), data, 0o600); err != nil {
		b.Fatal(err)
	}
	tgz, err := Tgz(src)
	if err != nil {
		b.Fatal(err)
	}
	sum := sha256.Sum256(tgz)
	md := &metadata{AppRelPath: ".", Checksum: hex.EncodeToString(sum[:])}
	b.SetBytes(int64(len(tgz)))
	for b.Loop() {
		i := -1
		recv := func(m *streamRequest) error {
			switch {
			case i < 0:
				i, *m = 0, streamRequest{Metadata: md}
			case i >= len(tgz):
				return io.EOF
			default:
				n := min(1<<10, len(tgz)-i)
				*m = streamRequest{Chunk: tgz[i : i+n], HasChunk: true}
				i += n
			}
			return nil
		}
		if _, _, err := receive(context.Background(), recv, b.TempDir(), Limits{}.withDefaults()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkManifestResponse is what the service does with a generation's
// output before gRPC sends it: split into documents and encoded, for 51
// documents of 30 KB (about cert-manager's with its CRDs).
func BenchmarkManifestResponse(b *testing.B) {
	var out strings.Builder
	for range 51 {
		out.WriteString("---\n{\"apiVersion\":\"v1\",\"data\":\"" + strings.Repeat("x", 30000) + "\"}\n")
	}
	stdout := []byte(out.String())
	b.SetBytes(int64(len(stdout)))
	for b.Loop() {
		m := &manifestResponse{Manifests: documents(stdout)}
		if enc, err := (codec{}).Marshal(m); err != nil || len(enc) < len(stdout)-51*5 {
			b.Fatalf("%d bytes encoded, %v", len(enc), err)
		}
	}
}
