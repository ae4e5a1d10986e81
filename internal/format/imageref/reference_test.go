package imageref

import (
	"errors"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

const dg = "sha256:8cc80185ab75ed0521e3e8f67c77c9a31132e90e7e0ff19c4360db6641eacafa"

var (
	sha384 = "sha384:" + strings.Repeat("0123456789ab", 8)
	sha512 = "sha512:" + strings.Repeat("0123456789abcdef", 8)
)

func TestParseReference(t *testing.T) {
	cases := []struct {
		in   string
		want Reference
		err  bool
	}{
		{in: "ghcr.io/org/chart:1.0.0", want: Reference{Registry: "ghcr.io", Repository: "org/chart", Tag: "1.0.0"}},
		{in: "http://127.0.0.1:5078/ocm/example.com/fixtures/podinfo-app/podinfo-mini:0.1.0@" + dg,
			want: Reference{Scheme: "http", Registry: "127.0.0.1:5078", Repository: "ocm/example.com/fixtures/podinfo-app/podinfo-mini", Tag: "0.1.0", Digest: dg}},
		{in: "oci://registry.local:5000/charts/app@" + dg, want: Reference{Registry: "registry.local:5000", Repository: "charts/app", Digest: dg}},
		{in: "HTTPS://ghcr.io/a/b:v1", want: Reference{Scheme: "https", Registry: "ghcr.io", Repository: "a/b", Tag: "v1"}},
		{in: "localhost/a", want: Reference{Registry: "localhost", Repository: "a"}},
		{in: "nginx:1.27", want: Reference{Registry: "docker.io", Repository: "library/nginx", Tag: "1.27"}},
		{in: "stefanprodan/podinfo:6.7.0", want: Reference{Registry: "docker.io", Repository: "stefanprodan/podinfo", Tag: "6.7.0"}},
		// Image references as workloads write them (localisation's cases).
		{in: "registry.internal.example:5000/mirror/stefanprodan/podinfo:6.7.0", want: Reference{Registry: "registry.internal.example:5000", Repository: "mirror/stefanprodan/podinfo", Tag: "6.7.0"}},
		{in: "localhost:5000/a:1", want: Reference{Registry: "localhost:5000", Repository: "a", Tag: "1"}},
		{in: "[::1]:5000/a:1", want: Reference{Registry: "[::1]:5000", Repository: "a", Tag: "1"}},
		{in: "nginx", want: Reference{Registry: "docker.io", Repository: "library/nginx"}},
		{in: "nginx@" + dg, want: Reference{Registry: "docker.io", Repository: "library/nginx", Digest: dg}},
		{in: "index.docker.io/library/redis", want: Reference{Registry: "docker.io", Repository: "library/redis"}},
		{in: "ghcr.io/a/b:1.0@" + dg, want: Reference{Registry: "ghcr.io", Repository: "a/b", Tag: "1.0", Digest: dg}},
		// The grammar's digests (go-digest's algorithms, each of its length):
		// sha384 parses, as distribution/reference.Parse reads it (it used to
		// be refused here and accepted by localisation).
		{in: "ghcr.io/a@" + sha384, want: Reference{Registry: "ghcr.io", Repository: "a", Digest: sha384}},
		{in: "ghcr.io/a:1@" + sha512, want: Reference{Registry: "ghcr.io", Repository: "a", Tag: "1", Digest: sha512}},
		{in: "ghcr.io/a@sha256:" + strings.ToUpper(dg[7:]), err: true},
		{in: "ghcr.io/a@sha256." + dg[7:], err: true},
		{in: "ghcr.io/a@sha384:" + strings.Repeat("ab", 32), err: true}, // a sha256's length
		{in: "ghcr.io/a@blake9:" + strings.Repeat("ab", 32), err: true},
		// An empty tag is not "no tag" (the grammar's tag has 1 to 128
		// characters): "app:" used to be docker.io/library/app here and an
		// error in localisation.
		{in: "app:", err: true},
		{in: "ghcr.io/a/b:", err: true},
		{in: "ghcr.io/a/b:@" + dg, err: true},
		// Localisation's former error cases.
		{in: "Upper/Case:1", err: true},
		{in: "a//b", err: true},
		{in: "ghcr.io/", err: true},
		{in: "bad_host:5000:1/x", err: true},
		// hostile or malformed
		{in: "", err: true},
		{in: " ghcr.io/a:1", err: true},
		{in: "ftp://ghcr.io/a:1", err: true},
		{in: "http://ghcr.io", err: true},
		{in: "http://org/a:1", err: true},
		{in: "ghcr.io/A/b:1", err: true},
		{in: "ghcr.io/a/../b:1", err: true},
		{in: "ghcr.io/a:bad tag", err: true},
		{in: "ghcr.io/a@sha256:1234", err: true},
		{in: "ghcr.io/a@md5:d41d8cd98f00b204e9800998ecf8427e", err: true},
		{in: "user:pass@ghcr.io/a:1", err: true},
		{in: "ghcr.io/a:" + strings.Repeat("x", 200), err: true},
		{in: "ghcr.io/" + strings.Repeat("a/", 3000), err: true},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := Parse(c.in)
			if c.err {
				if err == nil || !errors.Is(err, errdef.ErrInvalidInput) {
					t.Fatalf("got %+v, %v; want ErrInvalidInput", got, err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
	r, _ := Parse("http://h:1/a/b:t@" + dg)
	if r.Ref() != dg || r.String() != "h:1/a/b:t@"+dg {
		t.Fatalf("Ref %q String %q", r.Ref(), r.String())
	}
}
