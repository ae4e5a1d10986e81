package oci_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/oci"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/registry"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// render does what a generation needs from the registry: look the version
// up and read the chart (a local blob, or the transferred ociArtifact).
func render(t testing.TB, r *oci.Repository, version string) []byte {
	t.Helper()
	ctx := context.Background()
	cv, err := r.LookupComponentVersion(ctx, compName, version)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cv.Descriptor().Resource(ocm.Identity{"name": "chart"})
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := r.OpenAccess(ctx, cv, res.Access)
	return readBlob(t, b, err)
}

func TestRequestCounts(t *testing.T) {
	d := makeData(t)
	for _, mode := range []string{"localBlob", "ociArtifact"} {
		t.Run(mode, func(t *testing.T) {
			reg := registrytest.Start(t)
			var pushed []registrytest.Pushed
			if mode == "localBlob" {
				pushed = reg.Push(t, "ocm", component(d, "1.0.0"))
			} else {
				pushed = reg.PushTransferred(t, "ocm", component(d, "1.0.0"))
			}
			pinned := "1.0.0@" + pushed[0].ManifestDigest
			cacheDir := t.TempDir()
			count := func(name string, r *oci.Repository, version string, want int) {
				t.Helper()
				reg.Reset()
				render(t, r, version)
				reqs := reg.Requests()
				var lines []string
				for _, q := range reqs {
					lines = append(lines, q.String())
				}
				t.Logf("%-11s %-32s %d request(s) %v", mode, name, len(reqs), lines)
				if len(reqs) != want {
					t.Errorf("%s: %d requests, want %d", name, len(reqs), want)
				}
				for _, q := range reqs {
					if strings.Contains(q.Path, "podinfo") || strings.Contains(q.Path, "/manifests/latest") {
						t.Errorf("unneeded request %s", q)
					}
				}
			}
			// A fresh process: new client, cold cache. Manifest by tag,
			// config, descriptor layer, and the chart (a layer; or the chart
			// artifact's manifest by digest plus its chart layer).
			cold := 4
			if mode == "ociArtifact" {
				cold = 5
			}
			count("cold, by tag", open(t, reg, cacheDir), "1.0.0", cold)
			// A new process, warm cache, by tag: the tag is resolved (1 GET).
			r := open(t, reg, cacheDir)
			count("warm, by tag, new process", r, "1.0.0", 1)
			// Same process again (one generation): the tag is memoised.
			count("warm, by tag, same process", r, "1.0.0", 0)
			// A new process, warm cache, pinned by digest: nothing.
			count("warm, pinned by digest", open(t, reg, cacheDir), pinned, 0)
			// No disk cache at all, pinned by digest: everything once.
			count("no cache, pinned by digest", open(t, reg, ""), pinned, cold)
		})
	}
}

func TestConcurrentFetchDownloadsOnce(t *testing.T) {
	d := makeData(t)
	reg := registrytest.Start(t, registrytest.WithMiddleware(slowBlobs(100*time.Millisecond)))
	reg.Push(t, "ocm", component(d, "1.0.0"))
	setDigest := blob.Digest(d.set)
	for _, shared := range []bool{true, false} {
		t.Run(fmt.Sprintf("shared client %v", shared), func(t *testing.T) {
			reg.Reset()
			cacheDir := t.TempDir()
			one := open(t, reg, cacheDir)
			var wg sync.WaitGroup
			for i := 0; i < 16; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := one
					if !shared {
						// Own client and own Cache on one directory: the
						// flock is what keeps them from downloading twice.
						r = open(t, reg, cacheDir)
					}
					if got := render(t, r, "1.0.0"); !bytes.Equal(got, d.set) {
						t.Error("content differs")
					}
				}()
			}
			wg.Wait()
			n := reg.Count(func(q registrytest.Request) bool { return q.IsBlob() && strings.HasSuffix(q.Path, setDigest) })
			t.Logf("16 goroutines (shared client %v): chart blob downloaded %d time(s), %d requests in all", shared, n, reg.Count(nil))
			if n != 1 {
				t.Fatalf("chart blob downloaded %d times, want 1", n)
			}
		})
	}
}

func slowBlobs(d time.Duration) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
				time.Sleep(d)
			}
			next.ServeHTTP(w, r)
		})
	}
}

const helperEnv = "ARGOCD_OCM_OCI_TEST_HELPER"

// TestHelperProcess is the child of TestCrossProcessDownloadsOnce.
func TestHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) == "" {
		t.Skip("helper process for the cross-process test")
	}
	r, err := oci.New("http://"+os.Getenv("REG_HOST")+"/ocm", baseOpts(os.Getenv("CACHE_DIR"))...)
	if err == nil {
		var cv ocm.ComponentVersion
		cv, err = r.LookupComponentVersion(context.Background(), compName, "1.0.0")
		if err == nil {
			res, _ := cv.Descriptor().Resource(ocm.Identity{"name": "chart"})
			var b ocm.Blob
			b, err = cv.OpenLocalBlob(context.Background(), res.Access)
			if err == nil {
				_, err = io.Copy(io.Discard, b)
				b.Close()
			}
		}
	}
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	fmt.Println("OK")
	os.Exit(0)
}

func TestCrossProcessDownloadsOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	d := makeData(t)
	reg := registrytest.Start(t, registrytest.WithMiddleware(slowBlobs(300*time.Millisecond)))
	reg.Push(t, "ocm", component(d, "1.0.0"))
	reg.Reset()
	cacheDir := t.TempDir()
	const n = 4
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for i := 0; i < n; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
		cmd.Env = append(os.Environ(), helperEnv+"=1", "REG_HOST="+reg.Host, "CACHE_DIR="+cacheDir)
		out := &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil || !strings.Contains(outs[i].String(), "OK") {
			t.Fatalf("process %d: %v: %s", i, err, outs[i])
		}
	}
	setDigest := blob.Digest(d.set)
	blobs := reg.Count(func(q registrytest.Request) bool { return q.IsBlob() && strings.HasSuffix(q.Path, setDigest) })
	t.Logf("%d processes: chart blob downloaded %d time(s); %d requests in all", n, blobs, reg.Count(nil))
	if blobs != 1 {
		t.Fatalf("%d processes downloaded the chart blob %d times, want 1", n, blobs)
	}
}

// Generations of a render server sharing TagResolutions: the first resolves
// the tag, the next ones (new clients, within the time to live) ask the
// registry nothing, even without a disk cache; after it, the tag again.
// The generations "within the time to live" must be: where a loaded
// machine made them take longer than it (a fixed 200 ms failed 3 times in
// 40 on 2 busy cores), the case proves nothing either way and runs again
// with a longer one.
func TestSharedTagResolutions(t *testing.T) {
	d := makeData(t)
	for ttl := 200 * time.Millisecond; !sharedTagResolutions(t, d, ttl); ttl *= 4 {
		if ttl >= 10*time.Second {
			t.Fatalf("the warm generations never ran within a TTL of %v", ttl)
		}
		t.Logf("the warm generations took longer than the TTL of %v: again with %v", ttl, 4*ttl)
	}
}

// sharedTagResolutions runs TestSharedTagResolutions with ttl; false: the
// generations that must be within it were not.
func sharedTagResolutions(t *testing.T, d testData, ttl time.Duration) bool {
	reg := registrytest.Start(t)
	reg.Push(t, "ocm", component(d, "1.0.0"))
	shared := oci.NewTagResolutions(ttl)
	cacheDir := t.TempDir()
	tagGETs := func() (n int) {
		for _, q := range reg.Requests() {
			if strings.Contains(q.Path, "/manifests/") && !strings.Contains(q.Path, "sha256:") {
				n++
			}
		}
		return n
	}
	resolving := time.Now() // the resolution's time to live starts after this
	render(t, open(t, reg, cacheDir, oci.WithRecentTags(shared)), "1.0.0")
	reg.Reset()
	for range 5 {
		render(t, open(t, reg, cacheDir, oci.WithRecentTags(shared)), "1.0.0")
	}
	warm := len(reg.Requests())
	render(t, open(t, reg, "", oci.WithRecentTags(shared)), "1.0.0") // no disk cache: the manifest comes along
	if time.Since(resolving) >= ttl {
		return false
	}
	if warm != 0 {
		t.Fatalf("5 warm generations within the TTL made %d requests, want 0", warm)
	}
	if n := tagGETs(); n != 0 {
		t.Fatalf("a generation without disk cache asked for the tag %d times", n)
	}
	time.Sleep(ttl + 50*time.Millisecond)
	reg.Reset()
	render(t, open(t, reg, cacheDir, oci.WithRecentTags(shared)), "1.0.0")
	if n := tagGETs(); n != 1 {
		t.Fatalf("after the TTL: %d tag requests, want 1", n)
	}
	return true
}

// A shared tag resolution keeps the manifest's bytes only when they are
// small: a tenant's registry serving large manifests for tag after tag
// must not fill a render worker for the generations after it. The next
// generation reads a large manifest by digest (one GET), not by tag.
func TestSharedTagResolutionsKeepSmallManifestsOnly(t *testing.T) {
	reg := registrytest.Start(t)
	cfg := reg.PushBlob(t, "ocm/big", []byte("{}"))
	cfg.MediaType = "application/vnd.oci.empty.v1+json"
	for _, c := range []struct {
		tag        string
		annotation int
		digestGETs int
	}{{"small", 100, 0}, {"large", 20 << 10, 1}} {
		m := fmt.Sprintf(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":%q,"digest":%q,"size":%d},"layers":[],"annotations":{"a":%q}}`,
			cfg.MediaType, cfg.Digest, cfg.Size, strings.Repeat("x", c.annotation))
		reg.PushManifest(t, "ocm/big", c.tag, "application/vnd.oci.image.manifest.v1+json", []byte(m))
		shared := oci.NewTagResolutions(time.Minute)
		ref := "http://" + reg.Host + "/ocm/big:" + c.tag
		client := func() *oci.Client {
			cl, err := oci.NewClient(append(baseOpts("", registry.WithPlainHTTP(reg.Host)), oci.WithRecentTags(shared))...)
			if err != nil {
				t.Fatal(err)
			}
			return cl
		}
		if _, err := client().FetchArtifact(context.Background(), ref); err != nil {
			t.Fatal(err)
		}
		reg.Reset()
		if _, err := client().FetchArtifact(context.Background(), ref); err != nil {
			t.Fatal(err)
		}
		tags, digests := 0, 0
		for _, q := range reg.Requests() {
			switch {
			case strings.Contains(q.Path, "/manifests/sha256:"):
				digests++
			case strings.Contains(q.Path, "/manifests/"):
				tags++
			}
		}
		if tags != 0 || digests != c.digestGETs {
			t.Errorf("%s manifest: the next generation made %d tag and %d digest requests, want 0 and %d", c.tag, tags, digests, c.digestGETs)
		}
	}
}
