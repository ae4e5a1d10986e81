package registrytest_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
)

func TestStartPushCount(t *testing.T) {
	reg := registrytest.Start(t, registrytest.WithBasicAuth("u", "p"))
	tree, _ := ocmbuild.TarFiles(map[string][]byte{"a.yaml": []byte("a: 1\n")}, false)
	c := &ocmbuild.Component{Name: "example.com/x", Version: "1.0.0+b.1", Resources: []ocmbuild.Resource{{Name: "t", Type: "directoryTree", Data: tree, MediaType: ocmbuild.MediaTypeTar}}}
	p := reg.Push(t, "base", c)
	if p[0].Repository != "base/component-descriptors/example.com/x" || p[0].Tag != "1.0.0.build-b.1" {
		t.Fatalf("pushed %+v", p[0])
	}
	reg.Reset()
	// Without credentials the registry refuses; the request is recorded.
	resp, err := http.Get(reg.URL + "/v2/base/component-descriptors/example.com/x/manifests/1.0.0.build-b.1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || reg.Count(nil) != 1 || reg.Requests()[0].Status != 401 {
		t.Fatalf("status %d, requests %v", resp.StatusCode, reg.Requests())
	}
	// With them it serves the manifest.
	desc, rc, err := reg.Repository(t, p[0].Repository).FetchReference(context.Background(), p[0].Tag)
	if err != nil {
		t.Fatal(err)
	}
	rc.Close()
	if desc.Digest.String() != p[0].ManifestDigest {
		t.Fatalf("digest %s, want %s", desc.Digest, p[0].ManifestDigest)
	}
	if n := reg.Count(func(q registrytest.Request) bool { return q.IsManifest() && strings.HasSuffix(q.Path, p[0].Tag) }); n < 1 {
		t.Fatalf("manifest requests not counted: %v", reg.Requests())
	}
}

// A request is in the log, with its status, as soon as its client has the
// answer, even while the handler is still running after writing it (as
// net/http's handlers may): tests count requests right after their client
// returns.
func TestRequestLoggedBeforeTheClientSeesTheAnswer(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	linger := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if strings.HasSuffix(req.URL.Path, "/linger") {
				w.WriteHeader(http.StatusTeapot)
				w.(http.Flusher).Flush()
				<-release // still running when the client has its answer
				return
			}
			next.ServeHTTP(w, req)
		})
	}
	reg := registrytest.Start(t, registrytest.WithMiddleware(linger))
	resp, err := http.Get(reg.URL + "/v2/x/linger")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if q := reg.Requests(); resp.StatusCode != http.StatusTeapot || len(q) != 1 || q[0].Status != http.StatusTeapot || q[0].Path != "/v2/x/linger" {
		t.Fatalf("status %d, requests %v", resp.StatusCode, q)
	}
	reg.Reset()
	if q := reg.Requests(); len(q) != 0 {
		t.Fatalf("after Reset: %v", q)
	}
}
