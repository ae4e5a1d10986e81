package localize

import (
	"strings"
	"testing"
)

var dgst = "sha256:" + strings.Repeat("ab", 32)

func TestParseRef(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Ref
		str  string
	}{
		{"ghcr.io/stefanprodan/podinfo:6.7.0", Ref{"ghcr.io", "stefanprodan/podinfo", "6.7.0", ""}, ""},
		{"registry.internal.example:5000/mirror/stefanprodan/podinfo:6.7.0", Ref{"registry.internal.example:5000", "mirror/stefanprodan/podinfo", "6.7.0", ""}, ""},
		{"registry.internal.example:5000/podinfo", Ref{"registry.internal.example:5000", "podinfo", "", ""}, ""},
		{"ghcr.io/a/b@" + dgst, Ref{"ghcr.io", "a/b", "", dgst}, ""},
		{"ghcr.io/a/b:1.0@" + dgst, Ref{"ghcr.io", "a/b", "1.0", dgst}, ""},
		{"localhost:5000/a:1", Ref{"localhost:5000", "a", "1", ""}, ""},
		{"localhost/a", Ref{"localhost", "a", "", ""}, ""},
		{"nginx", Ref{"docker.io", "library/nginx", "", ""}, "docker.io/library/nginx"},
		{"redis:7.4", Ref{"docker.io", "library/redis", "7.4", ""}, "docker.io/library/redis:7.4"},
		{"bitnami/redis:7.4", Ref{"docker.io", "bitnami/redis", "7.4", ""}, "docker.io/bitnami/redis:7.4"},
		{"index.docker.io/library/redis", Ref{"docker.io", "library/redis", "", ""}, "docker.io/library/redis"},
		{"http://127.0.0.1:5078/ocm/x/y:0.1.0@" + dgst, Ref{"127.0.0.1:5078", "ocm/x/y", "0.1.0", dgst}, "127.0.0.1:5078/ocm/x/y:0.1.0@" + dgst},
		{"[::1]:5000/a:1", Ref{"[::1]:5000", "a", "1", ""}, ""},
	} {
		got, err := ParseRef(tc.in)
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.in, got, tc.want)
		}
		str := tc.str
		if str == "" {
			str = tc.in
		}
		if got.String() != str {
			t.Errorf("%s: String() = %s, want %s", tc.in, got, str)
		}
	}
}

func TestParseRefErrors(t *testing.T) {
	for _, in := range []string{"", "Upper/Case:1", "a/b:bad tag", "a/b@sha256:short", "a//b", "ghcr.io/", "a/b:", "bad_host:5000:1/x"} {
		if r, err := ParseRef(in); err == nil {
			t.Errorf("%q parsed as %+v", in, r)
		}
	}
}
