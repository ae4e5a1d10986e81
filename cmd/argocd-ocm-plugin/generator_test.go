package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/transfer"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/testutil"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// selfSigned writes a certificate for 127.0.0.1 and its key.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "generator"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// waitHealthy waits up to 10 s for the generator at base to answer
// /healthz with 200; log is its stderr, for the failure.
func waitHealthy(t *testing.T, client *http.Client, base string, log fmt.Stringer) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		resp, err := client.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no /healthz: %v\n%s", err, log)
		}
	}
}

// getParams posts body to the generator's getparams endpoint with token
// and returns the parameter sets of a 200 answer.
func getParams(t *testing.T, client *http.Client, base, token, body string) []map[string]any {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/api/v1/getparams.execute", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var out struct {
		Output struct {
			Parameters []map[string]any `json:"parameters"`
		} `json:"output"`
	}
	if err := json.Unmarshal(b, &out); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%d %s: %v", resp.StatusCode, b, err)
	}
	return out.Output.Parameters
}

// The command serves the contract (plain and TLS) from the sidecar's
// settings and stops cleanly on its context (SIGTERM).
func TestGeneratorCommand(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	const token = "command-test-token-0123456789"
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctfRoot, err := filepath.Abs("../../testdata/demo")
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, pool := selfSigned(t, dir)
	getenv := func(k string) string {
		if k == "ARGOCD_OCM_CACHE_DIR" {
			return filepath.Join(dir, "cache")
		}
		return ""
	}
	for _, tc := range []struct {
		name   string
		tls    bool
		scheme string
	}{{"http", false, "http"}, {"https", true, "https"}} {
		t.Run(tc.name, func(t *testing.T) {
			addr := freeAddr(t)
			args := []string{"generator", "--listen", addr, "--token-file", tokenFile, "--ctf-dir", ctfRoot}
			client := http.DefaultClient
			if tc.tls {
				args = append(args, "--tls-cert", certFile, "--tls-key", keyFile)
				client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var stderr testutil.SyncBuffer
			code := make(chan int, 1)
			go func() { code <- execute(ctx, newProcess(), args, io.Discard, &stderr, getenv, "", nil) }()
			base := tc.scheme + "://" + addr
			waitHealthy(t, client, base, &stderr)
			ps := getParams(t, client, base, token, `{"applicationSetName":"demo","input":{"parameters":{"repository":"./ctf","component":"example.com/demo/podinfo","latest":0}}}`)
			if len(ps) != 2 || ps[0]["version"] != "1.1.0+build.7" {
				t.Errorf("parameters %v", ps)
			}
			cancel()
			select {
			case c := <-code:
				if c != 0 {
					t.Errorf("exit %d: %s", c, stderr.String())
				}
			case <-time.After(15 * time.Second):
				t.Fatal("the generator did not stop")
			}
			if log := stderr.String(); strings.Contains(log, token) || !strings.Contains(log, "getparams") {
				t.Errorf("log:\n%s", log)
			}
		})
	}
}

// Installed before its token is set (the Secret a placeholder), the
// generator starts, is not ready and refuses every request, instead of
// restarting; once the file holds a token it serves, without a restart.
func TestGeneratorStartsWithoutToken(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token") // missing, as a Secret volume without the key
	ctfRoot, err := filepath.Abs("../../testdata/demo")
	if err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr testutil.SyncBuffer
	code := make(chan int, 1)
	args := []string{"generator", "--listen", addr, "--token-file", tokenFile, "--ctf-dir", ctfRoot}
	getenv := func(k string) string {
		if k == "ARGOCD_OCM_CACHE_DIR" {
			return filepath.Join(dir, "cache")
		}
		return ""
	}
	go func() { code <- execute(ctx, newProcess(), args, io.Discard, &stderr, getenv, "", nil) }()
	base := "http://" + addr
	status := func(path string) int {
		resp, err := http.Get(base + path)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for deadline := time.Now().Add(10 * time.Second); status("/healthz") != 200; time.Sleep(20 * time.Millisecond) {
		select {
		case c := <-code:
			t.Fatalf("the generator exited (%d) without a token: %s", c, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no /healthz:\n%s", stderr.String())
		}
	}
	if got := status("/readyz"); got != http.StatusServiceUnavailable {
		t.Errorf("/readyz without a token: %d, want 503", got)
	}
	const token = "later-token-0123456789abcdef"
	getParams := func() int {
		body := `{"applicationSetName":"demo","input":{"parameters":{"repository":"./ctf","component":"example.com/demo/podinfo","latest":1}}}`
		req, _ := http.NewRequest("POST", base+"/api/v1/getparams.execute", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := getParams(); got != http.StatusForbidden {
		t.Errorf("a request without a token configured: %d, want 403", got)
	}
	if !strings.Contains(stderr.String(), "no usable token yet") {
		t.Errorf("the start-up warning is missing:\n%s", stderr.String())
	}
	// The kubelet writes the Secret's key: the generator picks it up.
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); status("/readyz") != 200; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("/readyz still not 200 after the token was written:\n%s", stderr.String())
		}
	}
	if got := getParams(); got != 200 {
		t.Errorf("with the token: %d", got)
	}
	if strings.Contains(stderr.String(), token) {
		t.Error("the token in the log")
	}
}

func TestGeneratorCommandRefuses(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short")
	os.WriteFile(short, []byte("abc"), 0o600)
	long := filepath.Join(dir, "long")
	os.WriteFile(long, []byte("a-webhook-secret-of-enough-bytes"), 0o600)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"generator"}, "--token-file is required"},
		{[]string{"generator", "--token-file", short, "--tls-cert", "x"}, "go together"},
		{[]string{"generator", "--token-file", short, "--webhook-source", "name=r,kind=distribution"}, "--webhook-source #1: no secret-file"},
		{[]string{"generator", "--token-file", short, "--webhook-source", "name=r,kind=distribution,secret-file=" + short}, "--webhook-source #1: invalid input: token file " + short + " holds 3 bytes"},
		{[]string{"generator", "--token-file", short, "--webhook-source", "name=r,secret=abc"}, `unknown key "secret"`},
		{[]string{"generator", "--token-file", short, "--webhook-source", "name=R,kind=quay,secret-file=" + long}, "want lower-case letters"},
		{[]string{"generator", "--token-file", short, "--webhook-source", "name=r,kind=quay,secret-file=" + long}, `kind "quay"`},
		{[]string{"generator", "--token-file", short, "--webhook-source", "name=r,kind=harbor,secret-file=" + long, "--kubeconfig", filepath.Join(dir, "none")}, "registry webhooks: kubernetes API"},
	} {
		var stderr bytes.Buffer
		if code := execute(context.Background(), newProcess(), tc.args, io.Discard, &stderr, func(string) string { return "" }, "", nil); code == 0 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, %q", tc.args, code, stderr.String())
		}
		if strings.Contains(stderr.String(), "abc") || strings.Contains(stderr.String(), "enough-bytes") {
			t.Errorf("a token's or secret's content in a message: %q", stderr.String())
		}
	}
}

// With references, a referenced component whose own references ship the
// kro RGD that renders it (OCM's helm-nested) is one entry, as a render
// treats it, not a platform expanded into its references.
func TestGeneratorListsComponentRenderedByReferencedRGD(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	const token = "command-test-token-0123456789"
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const nested = "ocm.software/ocm-k8s-toolkit/examples/helm-nested"
	ctfDir := filepath.Join(dir, "ctfs", "ctf")
	parent := &ocmbuild.Component{Name: "example.com/platform/kro", Version: "1.0.0",
		References: []ocmbuild.Reference{{Name: "app", ComponentName: nested, Version: "1.0.0"}}}
	if err := ocmbuild.WriteCTF(ctfDir, parent); err != nil {
		t.Fatal(err)
	}
	tr := &transfer.Transfer{From: mustAbs("../../testdata/ocm-examples/helm-nested/ctf"), To: ctfDir, Component: nested, Version: "1.0.0", Recursive: true}
	if _, err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string {
		if k == "ARGOCD_OCM_CACHE_DIR" {
			return filepath.Join(dir, "cache")
		}
		return ""
	}
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr testutil.SyncBuffer
	done := make(chan int, 1)
	go func() {
		done <- execute(ctx, newProcess(), []string{"generator", "--listen", addr, "--token-file", tokenFile, "--ctf-dir", filepath.Dir(ctfDir)}, io.Discard, &stderr, getenv, "", nil)
	}()
	base := "http://" + addr
	waitHealthy(t, http.DefaultClient, base, &stderr)
	ps := getParams(t, http.DefaultClient, base, token, `{"applicationSetName":"kro","input":{"parameters":{"repository":"./ctf","component":"example.com/platform/kro","references":true}}}`)
	if len(ps) != 1 || ps[0]["component"] != nested || ps[0]["reference"] != "app" {
		t.Errorf("entries %v: want one, helm-nested itself (its RGD renders it)", ps)
	}
	cancel()
	<-done
}
