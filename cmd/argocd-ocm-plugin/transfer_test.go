package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/registry"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/testutil"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

const airgapComponent = "example.com/airgap/podinfo"

// publishAirgapSource publishes what docs/airgap.md transfers: a signed
// component version with the podinfo chart (an artifact set) and its image
// (an ociArtifact access, pinned by its digest), in a registry, and the
// image itself in that registry. It writes the public key to keyFile and
// returns the image's manifest digest.
func publishAirgapSource(t *testing.T, src *registrytest.Registry, keyFile string) digest.Digest {
	t.Helper()
	files, err := ocmbuild.ReadDir("../../testdata/src/charts/podinfo")
	if err != nil {
		t.Fatal(err)
	}
	chartTgz, err := ocmbuild.PackageChart(files)
	if err != nil {
		t.Fatal(err)
	}
	set, err := ocmbuild.ChartArtifactSet(chartTgz, "6.7.0", false)
	if err != nil {
		t.Fatal(err)
	}
	// The image: a config and a layer (never run, only copied).
	cfg := src.PushBlob(t, "stefanprodan/podinfo", []byte(`{"architecture":"amd64","os":"linux"}`))
	cfg.MediaType = ocispec.MediaTypeImageConfig
	layer := src.PushBlob(t, "stefanprodan/podinfo", bytes.Repeat([]byte("podinfo layer "), 4096))
	layer.MediaType = ocispec.MediaTypeImageLayerGzip
	m := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, Config: cfg, Layers: []ocispec.Descriptor{layer}}
	m.SchemaVersion = 2
	mraw, _ := json.Marshal(m)
	img := src.PushManifest(t, "stefanprodan/podinfo", "6.7.0", ocispec.MediaTypeImageManifest, mraw)

	c := &ocmbuild.Component{Name: airgapComponent, Version: "1.0.0", Provider: "example.com",
		Resources: []ocmbuild.Resource{
			{Name: "chart", Type: "helmChart", Data: set, MediaType: ocmbuild.MediaTypeArtifactSet, ReferenceName: airgapComponent + "/podinfo:6.7.0"},
			{Name: "image", Type: "ociImage", Version: "6.7.0", Relation: "external",
				Access: map[string]any{"type": "ociArtifact", "imageReference": "http://" + src.Host + "/stefanprodan/podinfo:6.7.0"},
				Digest: &ocm.Digest{HashAlgorithm: "SHA-256", NormalisationAlgorithm: "ociArtifactDigest/v1", Value: img.Digest.Encoded()},
				Labels: []ocmbuild.Label{{Name: "localization-hint", Value: map[string]any{"valuesPath": "image"}, Signing: true}}},
		}}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Sign("acme", key); err != nil {
		t.Fatal(err)
	}
	c.Blobs = []ocmbuild.Blob{{MediaType: ocmbuild.MediaTypeArtifactSet, Data: set}}
	src.Push(t, "ocm", c)
	der, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return img.Digest
}

// docBlocks returns the shell blocks of a page that are marked as run by
// the named test.
func docBlocks(t *testing.T, page, test string) [][]string {
	t.Helper()
	f, err := os.Open(page)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var blocks [][]string
	var cur []string
	in, marked, prev := false, false, ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !in && strings.HasPrefix(line, "```sh"):
			in, marked, cur = true, strings.Contains(prev, test), nil
		case in && strings.HasPrefix(line, "```"):
			in = false
			if marked {
				blocks = append(blocks, cur)
			}
		case in:
			cur = append(cur, line)
		}
		if strings.TrimSpace(line) != "" {
			prev = line
		}
	}
	return blocks
}

var varRE = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?`)

// shellWords splits a command line the way the page's commands are
// written: words separated by blanks, "double quotes" grouping, $VARS
// expanded.
func shellWords(line string, vars map[string]string) []string {
	var out []string
	var w strings.Builder
	quoted, any := false, false
	for _, r := range line {
		switch {
		case r == '"':
			quoted, any = !quoted, true
		case (r == ' ' || r == '\t') && !quoted:
			if any {
				out = append(out, w.String())
				w.Reset()
				any = false
			}
		default:
			w.WriteRune(r)
			any = true
		}
	}
	if any {
		out = append(out, w.String())
	}
	for i, s := range out {
		out[i] = varRE.ReplaceAllStringFunc(s, func(m string) string { return vars[varRE.FindStringSubmatch(m)[1]] })
	}
	return out
}

// TestAirgapDocument runs every command of docs/airgap.md, in order,
// against two loopback registries: "ghcr.io/acme/ocm" is a registry
// without credentials holding the signed component and its image,
// "registry.internal.example/ocm" one that requires the credentials the
// page exports. Then it checks what the page promises: the bundle carries
// the image, the internal registry holds chart and image as artifacts of
// their own, the second transfer copies nothing, verify passes, and the
// render points the image at its copy in the internal registry.
func TestAirgapDocument(t *testing.T) {
	src := registrytest.Start(t)
	internal := registrytest.Start(t, registrytest.WithBasicAuth("replicator", "change-me"))
	work := t.TempDir()
	imgDigest := publishAirgapSource(t, src, filepath.Join(work, "acme.pub"))
	page := mustAbs("../../docs/airgap.md")
	t.Chdir(work)

	// What the page's names stand for here.
	vars := map[string]string{}
	overrides := map[string]string{"SOURCE": "http://" + src.Host + "/ocm", "INTERNAL": "http://" + internal.Host + "/ocm"}
	credPrefix := registry.EnvPrefix + registry.EnvName("registry.internal.example") + "_"
	environ := map[string]string{
		"ARGOCD_OCM_CACHE_DIR":  filepath.Join(work, "cache"),
		"ARGOCD_OCM_PLAIN_HTTP": internal.Host, // the page's registry speaks HTTPS; this one plain HTTP
	}
	getenv := func(k string) string {
		if v, ok := environ[k]; ok {
			return v
		}
		return os.Getenv(k)
	}
	var outputs []string
	blocks := docBlocks(t, page, "TestAirgapDocument")
	if len(blocks) < 5 {
		t.Fatalf("found %d blocks of docs/airgap.md to run", len(blocks))
	}
	for _, block := range blocks {
		text := strings.ReplaceAll(strings.Join(block, "\n"), "\\\n", " ")
		for _, line := range strings.Split(text, "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			words := shellWords(line, vars)
			switch {
			case line == "make build":
			case words[0] == "export":
				k, v, _ := strings.Cut(words[1], "=")
				if o, ok := overrides[k]; ok {
					v = o
				}
				if rest, ok := strings.CutPrefix(k, credPrefix); ok {
					// The page's internal registry host is this test's.
					k = registry.EnvPrefix + registry.EnvName(internal.Host) + "_" + rest
				}
				vars[k] = v
				if strings.HasPrefix(k, "ARGOCD_OCM_") {
					t.Setenv(k, v)
				}
			case words[0] == "mkdir" && len(words) == 3 && words[1] == "-p":
				if err := os.MkdirAll(words[2], 0o755); err != nil {
					t.Fatal(err)
				}
			case words[0] == "cp" && len(words) == 3:
				b, err := os.ReadFile(words[1])
				if err == nil {
					err = os.WriteFile(words[2], b, 0o644)
				}
				if err != nil {
					t.Fatal(err)
				}
			case words[0] == "bin/argocd-ocm-plugin":
				var stdout, stderr bytes.Buffer
				if code := run(words[1:], &stdout, &stderr, getenv); code != 0 {
					t.Fatalf("%s: exit %d\n%s", line, code, stderr.String())
				}
				if strings.Contains(stderr.String()+stdout.String(), "change-me") {
					t.Errorf("%s: output shows the password", line)
				}
				outputs = append(outputs, line+"\n"+stdout.String()+stderr.String())
			default:
				t.Fatalf("docs/airgap.md: %q: this test does not know how to run it; keep the page to commands it runs", line)
			}
		}
	}
	find := func(sub string) string {
		for _, o := range outputs {
			if strings.Contains(o, sub) {
				return o
			}
		}
		t.Fatalf("no command ran %q", sub)
		return ""
	}
	all := strings.Join(outputs, "\n")
	t.Log(all)
	if n := strings.Count(all, "verified "+airgapComponent+":1.0.0 signature acme"); n != 2 {
		t.Errorf("verify passed %d times, want 2 (bundle and internal registry):\n%s", n, all)
	}
	transfers := strings.Split(all, "transfer --from inside/podinfo-bundle.tgz")
	if len(transfers) != 3 || !strings.Contains(transfers[2], "nothing to copy") || strings.Contains(transfers[1], "nothing to copy") {
		t.Errorf("the first internal transfer copies, the second copies nothing:\n%s", all)
	}
	rendered := find("render --repository")
	want := "image: " + internal.Host + "/ocm/stefanprodan/podinfo"
	if !strings.Contains(rendered, want) || strings.Contains(rendered, src.Host) {
		t.Errorf("render does not point the image at its copy (%s):\n%s", want, rendered)
	}
	// The internal registry holds the chart and the image as artifacts of
	// their own: the image by the publisher's digest.
	repo := internal.Repository(t, "ocm/stefanprodan/podinfo")
	d, err := repo.Resolve(t.Context(), "6.7.0")
	if err != nil || d.Digest != imgDigest {
		t.Errorf("internal image 6.7.0 = %v (%v), want %s", d.Digest, err, imgDigest)
	}
	if _, err := internal.Repository(t, "ocm/"+airgapComponent+"/podinfo").Resolve(t.Context(), "6.7.0"); err != nil {
		t.Errorf("internal chart: %v", err)
	}
}

// exampleDocs reads the YAML documents of a file of manifests/examples/replication.
func exampleDocs(t *testing.T, name string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../../manifests/examples/replication", name))
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, doc := range strings.Split(string(b), "\n---\n") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, m)
	}
	return out
}

func containerArgs(t *testing.T, obj map[string]any) []string {
	t.Helper()
	spec := testutil.Dig(obj, "spec", "template", "spec")
	if obj["kind"] == "CronJob" {
		spec = testutil.Dig(obj, "spec", "jobTemplate", "spec", "template", "spec")
	}
	if cmd := testutil.Dig(spec, "containers", 0, "command", 0); cmd != "/usr/local/bin/argocd-ocm-plugin" {
		t.Fatalf("%s: command %v", obj["kind"], cmd)
	}
	var out []string
	for _, a := range testutil.Dig(spec, "containers", 0, "args").([]any) {
		out = append(out, a.(string))
	}
	return out
}

// The replication example does what it says, on loopback registries:
// before the Job ran, rendering from the environment's registry fails with
// one line naming the component and prints nothing (Argo CD applies and
// prunes nothing); the Job's transfer copies the version; then the same
// render succeeds with the image localised to the copy; the CronJob's run
// copies nothing. The bundle variant replicates from a CTF checked out of git.
func TestReplicationExample(t *testing.T) {
	src := registrytest.Start(t)
	internal := registrytest.Start(t, registrytest.WithBasicAuth("replicator", "change-me"))
	work := t.TempDir()
	publishAirgapSource(t, src, filepath.Join(work, "acme.pub"))
	for _, r := range []*registrytest.Registry{internal} {
		t.Setenv(registry.EnvPrefix+registry.EnvName(r.Host)+"_USERNAME", "replicator")
		t.Setenv(registry.EnvPrefix+registry.EnvName(r.Host)+"_PASSWORD", "change-me")
	}
	hosts := strings.NewReplacer("ghcr.io/acme/ocm", "http://"+src.Host+"/ocm", "registry.internal.example/ocm", "http://"+internal.Host+"/ocm",
		"/bundle/repo/bundles/podinfo-bundle.tgz", filepath.Join(work, "podinfo-bundle.tgz"))
	getenv := env(map[string]string{"ARGOCD_OCM_PLAIN_HTTP": internal.Host, "ARGOCD_OCM_CACHE_DIR": filepath.Join(work, "cache")})
	cli := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		for i, a := range args {
			args[i] = hosts.Replace(a)
		}
		code := run(args, &stdout, &stderr, getenv)
		return code, stdout.String(), stderr.String()
	}

	apps := map[string]map[string]any{}
	for _, f := range []string{"apps/replication.yaml", "apps/podinfo.yaml"} {
		a := exampleDocs(t, f)[0]
		apps[testutil.Dig(a, "metadata", "name").(string)] = a
	}
	if w1, w2 := testutil.Dig(apps["ocm-replication"], "metadata", "annotations", "argocd.argoproj.io/sync-wave"), testutil.Dig(apps["podinfo"], "metadata", "annotations", "argocd.argoproj.io/sync-wave"); w1 != "-1" || w2 != "0" {
		t.Errorf("sync waves %v, %v: the copy must come first", w1, w2)
	}
	params := map[string]string{}
	for _, p := range testutil.Dig(apps["podinfo"], "spec", "source", "plugin", "parameters").([]any) {
		params[testutil.Dig(p, "name").(string)] = testutil.Dig(p, "string").(string)
	}
	jobs := exampleDocs(t, "job/replicate.yaml")
	jobArgs, cronArgs := containerArgs(t, jobs[0]), containerArgs(t, jobs[1])
	if strings.Join(jobArgs, " ") != strings.Join(cronArgs, " ") {
		t.Errorf("Job and CronJob differ:\n%v\n%v", jobArgs, cronArgs)
	}
	joined := strings.Join(jobArgs, " ")
	for _, want := range []string{"--to " + params["repository"], "--component " + params["component"], "--version " + params["version"]} {
		if !strings.Contains(joined, want) {
			t.Errorf("the Job (%s) does not copy what podinfo reads (%s)", joined, want)
		}
	}
	render := []string{"render", "--repository", params["repository"], "--component", params["component"], "--version", params["version"], "--localize"}

	code, stdout, stderr := cli(render...)
	if code == 0 || stdout != "" || strings.Count(strings.TrimSpace(stderr), "\n") != 0 ||
		!strings.Contains(stderr, "component "+airgapComponent+":1.0.0") || !strings.Contains(stderr, "not found") {
		t.Fatalf("before the copy: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	t.Logf("before the copy: %s", stderr)
	if code, _, stderr := cli(jobArgs...); code != 0 {
		t.Fatalf("the Job: exit %d: %s", code, stderr)
	}
	code, stdout, stderr = cli(render...)
	if code != 0 || !strings.Contains(stdout, "image: "+internal.Host+"/ocm/stefanprodan/podinfo:6.7.0@sha256:") {
		t.Fatalf("after the copy: exit %d: %s\n%s", code, stderr, stdout)
	}
	if code, _, stderr := cli(cronArgs...); code != 0 || !strings.Contains(stderr, "nothing to copy") {
		t.Fatalf("the CronJob: exit %d: %s", code, stderr)
	}

	// The bundle variant: a CTF built outside, checked out of git.
	if code, _, stderr := cli("transfer", "--from", "ghcr.io/acme/ocm", "--to", "/bundle/repo/bundles/podinfo-bundle.tgz", "--component", airgapComponent,
		"--version", "1.0.0", "--recursive", "--copy-images"); code != 0 {
		t.Fatalf("bundle: exit %d: %s", code, stderr)
	}
	// An image carried into a CTF is one artifact-set blob: two runs write
	// the same blobs (oras copies concurrently; the set keeps one order).
	var blobSets [2][]string
	for i := range blobSets {
		dir := filepath.Join(work, fmt.Sprintf("bundle-dir-%d", i))
		if code, _, stderr := cli("transfer", "--from", "ghcr.io/acme/ocm", "--to", dir, "--component", airgapComponent,
			"--version", "1.0.0", "--recursive", "--copy-images"); code != 0 {
			t.Fatalf("bundle directory %d: exit %d: %s", i, code, stderr)
		}
		ents, err := os.ReadDir(filepath.Join(dir, "blobs"))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			blobSets[i] = append(blobSets[i], e.Name())
		}
	}
	if len(blobSets[0]) < 3 || !slices.Equal(blobSets[0], blobSets[1]) {
		t.Errorf("two transfers with --copy-images wrote different blobs:\n%v\n%v", blobSets[0], blobSets[1])
	}
	other := registrytest.Start(t)
	hosts = strings.NewReplacer("registry.internal.example/ocm", "http://"+other.Host+"/ocm", "/bundle/repo/bundles/podinfo-bundle.tgz", filepath.Join(work, "podinfo-bundle.tgz"))
	bundleArgs := containerArgs(t, exampleDocs(t, "job-from-bundle/replicate.yaml")[0])
	if code, _, stderr := cli(bundleArgs...); code != 0 || !strings.Contains(stderr, "copied 1 component version") {
		t.Fatalf("the bundle Job: exit %d: %s", code, stderr)
	}
	if _, err := other.Repository(t, "ocm/stefanprodan/podinfo").Resolve(t.Context(), "6.7.0"); err != nil {
		t.Errorf("the bundle Job did not copy the image: %v", err)
	}
}

// transfer's mistakes: one line on stderr naming what to do, nothing on stdout.
func TestTransferCommandMistakes(t *testing.T) {
	ctf := mustAbs("../../testdata/ocm-cli/ctf")
	out := filepath.Join(t.TempDir(), "out")
	for _, tc := range []struct {
		args     []string
		mentions []string
	}{
		{[]string{"transfer", "--from", ctf, "--to", out}, []string{"--from, --to, --component and --version are required"}},
		{[]string{"transfer", "--from", ctf, "--to", out, "--component", "example.com/fixtures/podinfo-app", "--version", "9.9.9"},
			[]string{"component example.com/fixtures/podinfo-app:9.9.9", "not found (available: 1.0.0, 1.1.0+build.7)"}},
		{[]string{"transfer", "--from", mustAbs("../../testdata/ocm-cli/component-archive"), "--to", out, "--component", "example.com/fixtures/legacy-ca", "--version", "1.0.0"},
			[]string{"component archive", "ocm transfer componentarchive"}},
		{[]string{"transfer", "extra"}, []string{`unexpected argument "extra"`}},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tc.args, &stdout, &stderr, env(nil))
		// Progress lines may come first; the error is the last line.
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		if code == 0 || stdout.Len() != 0 || !strings.HasPrefix(lines[len(lines)-1], "argocd-ocm-plugin: ") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", tc.args, code, stdout.String(), stderr.String())
		}
		for _, m := range tc.mentions {
			if !strings.Contains(lines[len(lines)-1], m) {
				t.Errorf("%v: stderr %q lacks %q", tc.args, stderr.String(), m)
			}
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"transfer", "--help"}, &stdout, &stderr, env(nil)); code != 0 || !strings.Contains(stdout.String(), "--copy-resources") {
		t.Errorf("help: exit %d: %s", code, stdout.String())
	}
}

// Under a sidecar policy, the policy's default rule decides for transfer
// too: its repositories, its credentials, its plain-HTTP hosts.
func TestTransferUnderPolicy(t *testing.T) {
	reg := registrytest.Start(t, registrytest.WithBasicAuth("replicator", "pOl1cy-transfer"))
	dir := t.TempDir()
	write := func(plain string) string {
		p := filepath.Join(dir, "policy-"+plain+".yaml")
		pol := `apiVersion: argocd-ocm-plugin.io/v1alpha1
kind: SidecarPolicy
credentials:
- {name: internal, host: "` + reg.Host + `", env: INTERNAL}
default:
  repositories: [{host: "` + reg.Host + `", pathPrefix: ocm}]
  credentials: [internal]
`
		if plain != "" {
			pol += `  plainHTTP: ["` + plain + `"]` + "\n"
		}
		if err := os.WriteFile(p, []byte(pol), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Setenv("ARGOCD_OCM_REGISTRY_INTERNAL_USERNAME", "replicator")
	t.Setenv("ARGOCD_OCM_REGISTRY_INTERNAL_PASSWORD", "pOl1cy-transfer")
	ctf := mustAbs("../../testdata/ocm-cli/ctf")
	transfer := func(policy, to string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := run([]string{"transfer", "--from", ctf, "--to", to, "--component", "example.com/fixtures/kustomize-app", "--version", "1.0.0"},
			&stdout, &stderr, env(map[string]string{"ARGOCD_OCM_POLICY": policy, "ARGOCD_OCM_CACHE_DIR": filepath.Join(dir, "cache")}))
		if strings.Contains(stdout.String()+stderr.String(), "pOl1cy-transfer") {
			t.Errorf("the password is shown: %s", stderr.String())
		}
		return code, stderr.String()
	}
	if code, stderr := transfer(write(""), "http://"+reg.Host+"/ocm"); code == 0 || !strings.Contains(stderr, "plain HTTP") {
		t.Errorf("plain HTTP the policy does not allow: exit %d: %s", code, stderr)
	}
	if code, stderr := transfer(write(reg.Host), "http://"+reg.Host+"/elsewhere"); code == 0 || !strings.Contains(stderr, "refused by the sidecar policy") {
		t.Errorf("a repository the policy does not allow: exit %d: %s", code, stderr)
	}
	if code, stderr := transfer(write(reg.Host), "http://"+reg.Host+"/ocm"); code != 0 || !strings.Contains(stderr, "copied 1 component version") {
		t.Errorf("allowed: exit %d: %s", code, stderr)
	}
	if n := len(reg.Requests()); n == 0 {
		t.Error("the registry was not asked")
	}
}
