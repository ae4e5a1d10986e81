package oci_test

import (
	"bytes"
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/oci"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/registry"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

func TestHelmRepository(t *testing.T) {
	ctx := context.Background()
	d := makeData(t)
	other := []byte("another chart version")
	var indexGets, chartGets atomic.Int32
	var srv *httptest.Server
	srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "helm" || p != secret {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/charts/index.yaml":
			indexGets.Add(1)
			fmt.Fprintf(w, "apiVersion: v1\nentries:\n  mychart:\n  - version: 0.2.0\n    urls: [mychart-0.2.0.tgz]\n    digest: %s\n"+
				"  - version: 0.1.0\n    urls: [%s/charts/mychart-0.1.0.tgz]\n  - version: 0.0.1\n    urls: [mychart-0.0.1.tgz]\n    digest: %s\n",
				strings.TrimPrefix(blob.Digest(d.chartTgz), "sha256:"), srv.URL, strings.TrimPrefix(blob.Digest([]byte("x")), "sha256:"))
		case "/charts/mychart-0.2.0.tgz":
			chartGets.Add(1)
			w.Write(d.chartTgz)
		case "/charts/mychart-0.1.0.tgz":
			w.Write(other)
		case "/charts/mychart-0.0.1.tgz":
			w.Write([]byte("not what the index says"))
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the "no CA" case fails the handshake on purpose
	srv.StartTLS()
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "https://")
	caPEM := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	env := func(k string) (string, bool) {
		switch k {
		case registry.EnvPrefix + registry.EnvName(host) + "_USERNAME":
			return "helm", true
		case registry.EnvPrefix + registry.EnvName(host) + "_PASSWORD":
			return secret, true
		}
		return "", false
	}
	c, err := oci.NewClient(append(baseOpts(t.TempDir()), oci.WithRegistryOptions(registry.WithEnv(env)))...)
	if err != nil {
		t.Fatal(err)
	}
	acc := ocm.Access{Type: "helm/v1", Fields: map[string]any{"type": "helm/v1", "helmRepository": srv.URL + "/charts", "helmChart": "mychart:0.2.0", "caCert": caPEM}}
	for i := 0; i < 2; i++ {
		b, md, err := c.OpenAccess(ctx, nil, acc)
		if got := readBlob(t, b, err); !bytes.Equal(got, d.chartTgz) || md != "" || b.Digest() != blob.Digest(d.chartTgz) {
			t.Fatalf("chart differs (manifest digest %q)", md)
		}
	}
	if indexGets.Load() != 1 || chartGets.Load() != 1 {
		t.Errorf("index fetched %d times, chart %d times; want 1 and 1 (memo and cache)", indexGets.Load(), chartGets.Load())
	}
	// A chart URL without a digest in the index is read and named by content.
	ch, err := c.OpenHelm(ctx, oci.HelmAccess{Repository: srv.URL + "/charts/", Chart: "mychart", Version: "0.1.0", CACert: caPEM})
	if got := readBlob(t, ch, err); !bytes.Equal(got, other) || ch.Digest() != blob.Digest(other) {
		t.Fatal("chart without digest")
	}

	for name, tc := range map[string]struct {
		h    oci.HelmAccess
		want error
		text string
	}{
		"no CA":           {oci.HelmAccess{Repository: srv.URL + "/charts", Chart: "mychart:0.2.0"}, errdef.ErrInsecure, "TLS"},
		"unknown version": {oci.HelmAccess{Repository: srv.URL + "/charts", Chart: "mychart", Version: "9.9.9", CACert: caPEM}, errdef.ErrNotFound, "available: 0.0.1, 0.1.0, 0.2.0"},
		"unknown chart":   {oci.HelmAccess{Repository: srv.URL + "/charts", Chart: "nope:1.0.0", CACert: caPEM}, errdef.ErrNotFound, "chart nope"},
		"digest mismatch": {oci.HelmAccess{Repository: srv.URL + "/charts", Chart: "mychart:0.0.1", CACert: caPEM}, errdef.ErrDigestMismatch, ""},
		"no index":        {oci.HelmAccess{Repository: srv.URL + "/nothing", Chart: "mychart:0.2.0", CACert: caPEM}, errdef.ErrNotFound, "HTTP 404"},
		"versions differ": {oci.HelmAccess{Repository: srv.URL + "/charts", Chart: "mychart:0.2.0", Version: "0.1.0"}, errdef.ErrInvalidInput, ""},
		"no version":      {oci.HelmAccess{Repository: srv.URL + "/charts", Chart: "mychart"}, errdef.ErrInvalidInput, ""},
		"path in name":    {oci.HelmAccess{Repository: srv.URL + "/charts", Chart: "../x:1"}, errdef.ErrInvalidInput, ""},
		"credentials URL": {oci.HelmAccess{Repository: "https://u:" + secret + "@" + host + "/charts", Chart: "mychart:0.2.0"}, errdef.ErrInvalidInput, ""},
		"file URL":        {oci.HelmAccess{Repository: "file:///etc", Chart: "passwd:1"}, errdef.ErrInvalidInput, ""},
		"plain HTTP":      {oci.HelmAccess{Repository: "http://" + host + "/charts", Chart: "mychart:0.2.0"}, errdef.ErrInsecure, ""},
		"bad CA":          {oci.HelmAccess{Repository: srv.URL + "/charts", Chart: "mychart:0.2.0", CACert: "junk"}, errdef.ErrInvalidInput, ""},
	} {
		t.Run(name, func(t *testing.T) {
			ch, err := c.OpenHelm(ctx, tc.h)
			if err == nil {
				_, err = io.ReadAll(ch)
				ch.Close()
			}
			if !errors.Is(err, tc.want) || !strings.Contains(fmt.Sprint(err), tc.text) {
				t.Fatalf("got %v, want %v containing %q", err, tc.want, tc.text)
			}
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("secret leaked: %v", err)
			}
		})
	}
}

func TestHelmOCIRepository(t *testing.T) {
	ctx := context.Background()
	d := makeData(t)
	reg := registrytest.Start(t)
	reg.PushTransferred(t, "charts", component(d, "1.0.0"))
	r := open(t, reg, t.TempDir())
	ch, err := r.OpenHelm(ctx, oci.HelmAccess{Repository: "oci://" + reg.Host + "/charts/" + compName, Chart: "mychart", Version: "0.2.0"})
	if got := readBlob(t, ch, err); !bytes.Equal(got, d.chartTgz) || ch.ManifestDigest() == "" {
		t.Fatal("oci:// helm chart differs")
	}
}
