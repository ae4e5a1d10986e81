package argocdocm_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/archive"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/deployment"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/testutil"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/signing"
)

// The hostile inputs of issue 8, item 4, end to end through Renderer.Render:
// every row is refused with a specific sentinel and a one-line message naming
// what is wrong, within bounded memory where the input is a bomb; the rows
// about charts reading the cluster or files outside themselves render, with
// nothing leaked. Nothing is ever half-rendered: Render returns objects or
// an error, never both (the CLI prints only a successful result).
//
// |                      case                          |               error                                    |
// |----------------------------------------------------|--------------------------------------------------------|
// | archive path traversal / absolute path             | ErrUnsafeArchive (names the entry)                     |
// | symlink / hardlink escaping, absolute symlink      | ErrUnsafeArchive                                       |
// | device files (char, block), FIFO                   | ErrUnsafeArchive                                       |
// | decompression bombs (one entry, many entries,      | ErrLimitExceeded                                       |
// |   a CTF tgz, chart files, subchart archives)       |                                                        |
// | too many files                                     | ErrLimitExceeded                                       |
// | huge descriptor (> 4 MiB)                          | ErrLimitExceeded                                       |
// | dense descriptor under the byte limit              | ErrInvalidDescriptor + ErrLimitExceeded                |
// | deeply nested YAML (descriptor, manifest, values,  | ErrInvalidDescriptor / ErrRender / ErrInvalidInput     |
// |   chart values.yaml)                               |   ("exceeded max depth of 10000")                      |
// | nested past the nesting bound (129 to 8,000 levels: | ErrLimitExceeded ("nested more than 128 levels deep") |
// |   values, values files, --set-json, parameters,     |   before the work that grows with the depth           |
// |   definitions, descriptors, manifests, kustomize,   |                                                        |
// |   chart values.yaml and chart output)               |                                                        |
// | values 20,000 keys wide                             | renders, linear time and memory                        |
// | YAML bombs: dense or alias-expanding documents     | ErrLimitExceeded / "excessive aliasing"                |
// | malformed JSON/YAML (index, manifest, descriptor,  | ErrInvalidDescriptor / ErrRender+ErrInvalidInput /     |
// |   manifests, values)                               |   ErrInvalidInput                                      |
// | reference cycle (signature verification)           | ErrSignature + ErrInvalidDescriptor                    |
// | CEL expression exhausting CPU or memory            | ErrLimitExceeded                                       |
// | values.schema.json $ref to http:// or file://      | ErrRender + ErrUnsafeArchive, no request, no read      |
// | chart using lookup, getHostByName, .Files outside  | renders; lookup/DNS empty, no file content             |
// | chart archive paths outside the chart, file bombs  | ErrRender (+ ErrLimitExceeded)                         |
// | kustomize expansion bomb                           | ErrRender + ErrLimitExceeded                           |
func TestHostileInputTable(t *testing.T) {
	if testing.Short() {
		t.Skip("builds bombs of several hundred MiB (compressed to kilobytes)")
	}
	h := newHostileFixture(t)
	for _, tc := range h.cases(t) {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.r
			if r == nil {
				r = &argocdocm.Renderer{}
			}
			req := tc.req
			req.Application = "shop"
			var res *argocdocm.Result
			var err error
			start := time.Now()
			var cpu time.Duration
			alloc := allocated(func() {
				cpu = testutil.ProcessCPUTime(func() { res, err = r.Render(context.Background(), req) })
			})
			elapsed := time.Since(start)
			// CPU time, which a loaded machine does not stretch (no case
			// waits on a network; the package's tests run one at a time).
			if cpu > 30*time.Second {
				t.Errorf("took %v of CPU (%v)", cpu, elapsed)
			}
			if tc.maxAlloc > 0 && !raceOn && alloc > tc.maxAlloc {
				t.Errorf("allocated %d MiB, bound %d MiB", alloc>>20, tc.maxAlloc>>20)
			}
			if testing.Verbose() {
				t.Logf("%v (CPU %v), %d MiB allocated: %v", elapsed.Round(time.Millisecond), cpu.Round(time.Millisecond), alloc>>20, err)
			}
			if tc.want == nil {
				if err != nil {
					t.Fatalf("want a render, got %v", err)
				}
				tc.check(t, res.Objects)
				return
			}
			if res != nil {
				t.Errorf("a result came with the error: %d objects", len(res.Objects))
			}
			for _, want := range tc.want {
				if !errors.Is(err, want) {
					t.Errorf("got %v, want %v", err, want)
				}
			}
			if err == nil {
				return
			}
			var e *errdef.Error
			if !errors.As(err, &e) || e.Application != "shop" || e.Component != tc.req.Component {
				t.Errorf("not an errdef.Error naming application and component: %#v", err)
			}
			msg := err.Error()
			if strings.ContainsAny(msg, "\r\n") {
				t.Errorf("message is not one line: %q", msg)
			}
			for _, m := range tc.mentions {
				if !strings.Contains(msg, m) {
					t.Errorf("message %q does not mention %q", msg, m)
				}
			}
			if tc.after != nil {
				tc.after(t)
			}
		})
	}
}

// hostileCase is one row of the table.
type hostileCase struct {
	name     string
	r        *argocdocm.Renderer // nil: the default offline renderer
	req      argocdocm.Request
	want     []error // sentinels the error must match; nil: renders
	mentions []string
	maxAlloc uint64 // bound on bytes allocated during Render; 0: unchecked
	check    func(t *testing.T, objs []manifests.Object)
	after    func(t *testing.T)
}

const hostileComponent = "example.com/hostile/table"

type hostileFixture struct {
	dir        string
	ctf        string // hostileComponent with one resource per hostile archive or chart
	schemaHits atomic.Int32
	schemaURL  string
}

const hCM = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"

// hEntry is a raw tar entry.
type hEntry struct {
	name, link string
	typ        byte
	body       []byte
	size       int64 // declared size when body is nil and typ is TypeReg (streamed zeros)
}

func hFile(name, body string) hEntry { return hEntry{name: name, typ: tar.TypeReg, body: []byte(body)} }

// hTar writes entries as a tar, gzip-compressed when gz is set. A regular
// entry with a size and no body is size zero bytes, streamed, so that bombs
// of hundreds of MiB cost kilobytes to build and store.
func hTar(t testing.TB, gz bool, entries ...hEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w io.Writer = &buf
	var zw *gzip.Writer
	if gz {
		zw, _ = gzip.NewWriterLevel(&buf, gzip.BestCompression)
		w = zw
	}
	tw := tar.NewWriter(w)
	zeros := make([]byte, 1<<20)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: 0o644, ModTime: time.Unix(0, 0)}
		if e.typ == tar.TypeReg {
			hdr.Size = int64(len(e.body))
			if e.body == nil {
				hdr.Size = e.size
			}
		}
		if e.typ == tar.TypeChar || e.typ == tar.TypeBlock {
			hdr.Devmajor, hdr.Devminor = 1, 3
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if e.body != nil {
			tw.Write(e.body)
			continue
		}
		for left := hdr.Size; left > 0; {
			n := min(left, int64(len(zeros)))
			tw.Write(zeros[:n])
			left -= n
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if zw != nil {
		zw.Close()
	}
	return buf.Bytes()
}

// hChart packages a chart as `helm package` does, plus raw extra entries
// (links, hostile names) under the chart directory.
func hChart(t testing.TB, files map[string]string, extra ...hEntry) []byte {
	t.Helper()
	if len(extra) == 0 {
		m := map[string][]byte{}
		for n, b := range files {
			m[n] = []byte(b)
		}
		c, err := ocmbuild.PackageChart(m)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	var entries []hEntry
	for n, b := range files {
		entries = append(entries, hFile("probe/"+n, b))
	}
	return hTar(t, true, append(entries, extra...)...)
}

const hChartYAML = "apiVersion: v2\nname: probe\nversion: 0.1.0\n"

// deep is a YAML flow sequence nested n levels.
func deep(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

// nestedMap is n maps nested in each other.
func nestedMap(n int) map[string]any {
	m := map[string]any{"leaf": 1}
	for range n - 1 {
		m = map[string]any{"a": m}
	}
	return m
}

// wideMap is one map of n keys under "wide".
func wideMap(n int) map[string]any {
	w := make(map[string]any, n)
	for i := range n {
		w[fmt.Sprintf("k%05d", i)] = i
	}
	return map[string]any{"wide": w}
}

// dense is a YAML flow sequence of n zeros: two bytes per node.
func dense(n int) string { return "[" + strings.Repeat("0,", n) + "0]" }

// laughs is a "billion laughs" alias bomb as a YAML mapping at the given indent.
func laughs(indent string) string {
	var b strings.Builder
	b.WriteString(indent + "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	prev := "a"
	for _, c := range "bcdefghi" {
		fmt.Fprintf(&b, "%s%c: &%c [*%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s]\n", indent, c, c, prev, prev, prev, prev, prev, prev, prev, prev, prev)
		prev = string(c)
	}
	return b.String()
}

func newHostileFixture(t *testing.T) *hostileFixture {
	t.Helper()
	h := &hostileFixture{dir: t.TempDir()}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.schemaHits.Add(1)
		fmt.Fprint(w, `{"type": "object", "required": ["leaked"]}`)
	}))
	t.Cleanup(srv.Close)
	h.schemaURL = srv.URL + "/schema.json"

	tiny := strings.Repeat(hCM+"---\n", (8<<20)/len(hCM+"---\n"))
	var tinyFiles []hEntry
	for i := 0; i < 64; i++ {
		tinyFiles = append(tinyFiles, hFile(fmt.Sprintf("m%02d.yaml", i), strings.Repeat(hCM+"---\n", (256<<10)/len(hCM+"---\n"))))
	}
	var many []hEntry
	for i := 0; i <= archive.DefaultMaxFiles; i++ {
		many = append(many, hFile(fmt.Sprintf("f%05d.yaml", i), ""))
	}
	var manyBig []hEntry
	for i := 0; i < 64; i++ {
		manyBig = append(manyBig, hEntry{name: fmt.Sprintf("part%02d.bin", i), typ: tar.TypeReg, size: 1 << 20})
	}
	var subBombs []hEntry
	for i := 0; i < 30; i++ {
		sub := hTar(t, true, hFile(fmt.Sprintf("sub%d/Chart.yaml", i), fmt.Sprintf("apiVersion: v2\nname: sub%d\nversion: 0.1.0\n", i)),
			hEntry{name: fmt.Sprintf("sub%d/files/zeros", i), typ: tar.TypeReg, size: 4 << 20})
		subBombs = append(subBombs, hEntry{name: fmt.Sprintf("probe/charts/sub%d-0.1.0.tgz", i), typ: tar.TypeReg, body: sub})
	}
	probeTemplate := `apiVersion: v1
kind: ConfigMap
metadata: {name: probe}
data:
  lookup: {{ lookup "v1" "Secret" "kube-system" "" | toJson | quote }}
  lookupOne: {{ lookup "v1" "Namespace" "" "kube-system" | toJson | quote }}
  dns: {{ getHostByName "localhost" | quote }}
  parent: {{ .Files.Get "../../../../../../etc/passwd" | quote }}
  absolute: {{ .Files.Get "/etc/passwd" | quote }}
  link: {{ .Files.Get "files/link" | quote }}
  glob: "{{ range $p, $_ := .Files.Glob "../**" }}{{ $p }} {{ end }}{{ range $p, $_ := .Files.Glob "/etc/*" }}{{ $p }} {{ end }}"
  tpl: {{ tpl "{{ .Files.Get \"../etc/passwd\" }}" . | quote }}
`
	chart := func(extraFiles map[string]string) map[string]string {
		m := map[string]string{"Chart.yaml": hChartYAML, "templates/cm.yaml": hCM}
		for k, v := range extraFiles {
			m[k] = v
		}
		return m
	}
	dir := func(name string, data []byte) ocmbuild.Resource {
		mt := ocmbuild.MediaTypeTar
		if archive.IsGzip(data) {
			mt = ocmbuild.MediaTypeTgz
		}
		return ocmbuild.Resource{Name: name, Type: "directoryTree", MediaType: mt, Data: data}
	}
	helmRes := func(name string, data []byte) ocmbuild.Resource {
		return ocmbuild.Resource{Name: name, Type: "helmChart", MediaType: ocmbuild.MediaTypeHelmChart, Data: data}
	}
	comp := &ocmbuild.Component{Name: hostileComponent, Version: "1.0.0", Resources: []ocmbuild.Resource{
		dir("traversal", hTar(t, false, hFile("../../etc/passwd", hCM))),
		dir("absolute", hTar(t, false, hFile("/etc/passwd", hCM))),
		dir("symlink", hTar(t, false, hEntry{name: "cm.yaml", typ: tar.TypeSymlink, link: "../../../etc/passwd"})),
		dir("abs-symlink", hTar(t, false, hEntry{name: "cm.yaml", typ: tar.TypeSymlink, link: "/etc/passwd"})),
		dir("hardlink", hTar(t, false, hFile("a.yaml", hCM), hEntry{name: "cm.yaml", typ: tar.TypeLink, link: "../../etc/shadow"})),
		dir("chardev", hTar(t, false, hFile("a.yaml", hCM), hEntry{name: "null", typ: tar.TypeChar})),
		dir("blockdev", hTar(t, false, hFile("a.yaml", hCM), hEntry{name: "sda", typ: tar.TypeBlock})),
		dir("fifo", hTar(t, false, hFile("a.yaml", hCM), hEntry{name: "pipe", typ: tar.TypeFifo})),
		dir("bomb", hTar(t, true, hEntry{name: "bomb.yaml", typ: tar.TypeReg, size: archive.DefaultMaxSize + 1<<20})),
		dir("bomb-many", hTar(t, true, manyBig...)),
		dir("many-files", hTar(t, true, many...)),
		dir("dense-manifest", hTar(t, true, hFile("cm.yaml", hCM+"data: {a: "+dense(2<<20)+"}\n"))),
		dir("tiny-docs", hTar(t, true, hFile("docs.yaml", tiny))),
		dir("tiny-docs-files", hTar(t, true, tinyFiles...)),
		dir("deep-manifest", hTar(t, false, hFile("deep.yaml", hCM+"data: {a: "+deep(10_001)+"}\n"))),
		dir("laughs-manifest", hTar(t, false, hFile("laughs.yaml", hCM+"data:\n"+laughs("  ")))),
		dir("bad-yaml", hTar(t, false, hFile("bad.yaml", hCM+"data: [this is: not closed\n"))),
		dir("bad-json", hTar(t, false, hFile("bad.json", `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"},`))),
		dir("kustomize-bomb", hTar(t, false, kustomizeDoubling(40)...)),
		helmRes("schema-http", hChart(t, chart(map[string]string{"values.schema.json": `{"$ref": "` + h.schemaURL + `"}`}))),
		helmRes("schema-file", hChart(t, chart(map[string]string{"values.schema.json": `{"properties": {"x": {"$ref": "file:///etc/passwd"}}}`}))),
		helmRes("probe", hChart(t, map[string]string{"Chart.yaml": hChartYAML, "templates/cm.yaml": probeTemplate},
			hEntry{name: "probe/files/link", typ: tar.TypeSymlink, link: "/etc/passwd"})),
		helmRes("chart-parent", hChart(t, chart(nil), hFile("probe/../../evil.yaml", hCM))),
		helmRes("chart-absolute", hChart(t, chart(nil), hFile("probe//etc/evil.yaml", hCM))),
		// Helm 4 has no per-file bound (Helm 3's was 5 MiB): a 6 MiB file
		// loads as with helm template; the chart's 100 MiB in all holds.
		helmRes("chart-file-6mib", hChart(t, chart(nil), hEntry{name: "probe/files/zeros", typ: tar.TypeReg, size: 6 << 20})),
		helmRes("chart-file-bomb", hChart(t, chart(nil), hEntry{name: "probe/files/zeros", typ: tar.TypeReg, size: 101 << 20})),
		helmRes("chart-subchart-bombs", hChart(t, chart(nil), subBombs...)),
		helmRes("chart-dense-values", hChart(t, chart(map[string]string{"values.yaml": "a: " + dense(2<<20) + "\n"}))),
		helmRes("chart-deep-values", hChart(t, chart(map[string]string{"values.yaml": "a: " + deep(10_001) + "\n"}))),
		// Below the YAML reader's 10,000 levels, past the nesting bound.
		dir("nested-manifest", hTar(t, false, hFile("nested.yaml", hCM+"data: {a: "+deep(8_000)+"}\n"))),
		dir("nested-kustomize", hTar(t, false, hFile("kustomization.yaml", "resources: [nested.yaml]\n"), hFile("nested.yaml", hCM+"data: {a: "+deep(8_000)+"}\n"))),
		helmRes("chart-nested-values", hChart(t, chart(map[string]string{"values.yaml": "a: " + deep(8_000) + "\n"}))),
		helmRes("chart-nested-output", hChart(t, map[string]string{"Chart.yaml": hChartYAML,
			"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: {{ repeat 8000 \"[\" }}{{ repeat 8000 \"]\" }}}\n"})),
	}}
	h.ctf = filepath.Join(h.dir, "ctf")
	if err := ocmbuild.WriteCTF(h.ctf, comp); err != nil {
		t.Fatal(err)
	}
	return h
}

// kustomizeDoubling is a kustomization whose bases are included twice per
// level: kustomize would build l0 2^depth times.
func kustomizeDoubling(depth int) []hEntry {
	e := []hEntry{hFile("l0/cm.yaml", hCM), hFile("l0/kustomization.yaml", "resources: [cm.yaml]\n")}
	for i := 1; i <= depth; i++ {
		for _, side := range []string{"a", "b"} {
			e = append(e, hFile(fmt.Sprintf("l%d%s/kustomization.yaml", i, side), fmt.Sprintf("namePrefix: %s%d-\nresources: [../l%d]\n", side, i, i-1)))
		}
		e = append(e, hFile(fmt.Sprintf("l%d/kustomization.yaml", i), fmt.Sprintf("resources: [../l%da, ../l%db]\n", i, i)))
	}
	return append(e, hFile("kustomization.yaml", fmt.Sprintf("resources: [l%d]\n", depth)))
}

// hReq asks for one resource of the hostile component.
func (h *hostileFixture) hReq(resource string) argocdocm.Request {
	return argocdocm.Request{Repository: h.ctf, Component: hostileComponent, Version: "1.0.0", Resources: []string{resource}}
}

// rawCTF writes a CTF holding one component version with a raw descriptor.
func (h *hostileFixture) rawCTF(t *testing.T, name string, desc string) string {
	t.Helper()
	dir := filepath.Join(h.dir, name)
	if err := ocmbuild.WriteCTF(dir, &ocmbuild.Component{Name: hostileComponent, Version: "1.0.0", RawDescriptor: []byte(desc)}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func (h *hostileFixture) cases(t *testing.T) []hostileCase {
	const MiB = 1 << 20
	v2 := "meta: {schemaVersion: v2}\ncomponent:\n  name: " + hostileComponent + "\n  version: 1.0.0\n  provider: acme.org\n  resources: []\n"
	withLabel := func(value string) string {
		return v2 + "  labels:\n  - name: x\n    value: " + value + "\n"
	}
	comp := func(repo string) argocdocm.Request {
		return argocdocm.Request{Repository: repo, Component: hostileComponent, Version: "1.0.0"}
	}

	// A CTF whose artifact-index.json is cut off.
	badIndex := filepath.Join(h.dir, "bad-index")
	os.MkdirAll(filepath.Join(badIndex, "blobs"), 0o755)
	os.WriteFile(filepath.Join(badIndex, "artifact-index.json"), []byte(`{"schemaVersion": 1, "artifacts": [{"repository": "component-descriptors/`+hostileComponent+`", "tag": "1.0.0",`), 0o644)

	// A CTF whose descriptor manifest is malformed JSON (stored under its true digest).
	badManifest := filepath.Join(h.dir, "bad-manifest")
	mf := []byte(`{"schemaVersion": 2, "config": {"mediaType": `)
	os.MkdirAll(filepath.Join(badManifest, "blobs"), 0o755)
	os.WriteFile(filepath.Join(badManifest, "blobs", strings.Replace(blob.Digest(mf), ":", ".", 1)), mf, 0o644)
	os.WriteFile(filepath.Join(badManifest, "artifact-index.json"), []byte(`{"schemaVersion": 1, "artifacts": [{"repository": "component-descriptors/`+
		hostileComponent+`", "tag": "1.0.0", "digest": "`+blob.Digest(mf)+`", "mediaType": "application/vnd.oci.image.manifest.v1+json"}]}`), 0o644)

	// A CTF directory whose resource blob is a symlink to /etc/passwd.
	linked := filepath.Join(h.dir, "linked-blob")
	data := hTar(t, false, hFile("cm.yaml", hCM))
	if err := ocmbuild.WriteCTF(linked, &ocmbuild.Component{Name: hostileComponent, Version: "1.0.0", Resources: []ocmbuild.Resource{
		{Name: "manifests", Type: "directoryTree", MediaType: ocmbuild.MediaTypeTar, Data: data}}}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(linked, "blobs", strings.Replace(blob.Digest(data), ":", ".", 1))
	os.Remove(p)
	if err := os.Symlink("/etc/passwd", p); err != nil {
		t.Fatal(err)
	}

	// CTF archives (tar form) with an escaping entry and with a symlink entry.
	files, err := ocmbuild.CTF(&ocmbuild.Component{Name: hostileComponent, Version: "1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	var ctfEntries []hEntry
	for n, b := range files {
		ctfEntries = append(ctfEntries, hEntry{name: n, typ: tar.TypeReg, body: b})
	}
	escTar := filepath.Join(h.dir, "escaping.tar")
	os.WriteFile(escTar, hTar(t, false, append(ctfEntries, hFile("../../evil", "x"))...), 0o644)
	ctfBomb := filepath.Join(h.dir, "bomb.tgz")
	os.WriteFile(ctfBomb, hTar(t, true, append(ctfEntries, hEntry{name: "blobs/sha256.zeros", typ: tar.TypeReg, size: 128 << 20})...), 0o644)
	linkTar := filepath.Join(h.dir, "link.tgz")
	os.WriteFile(linkTar, hTar(t, true, append(ctfEntries, hEntry{name: "blobs/sha256.link", typ: tar.TypeSymlink, link: "/etc/passwd"})...), 0o644)

	// Values files.
	deepValues := filepath.Join(h.dir, "deep-values.yaml")
	os.WriteFile(deepValues, []byte("a: "+deep(10_001)+"\n"), 0o644)
	nestedValues := filepath.Join(h.dir, "nested-values.yaml")
	os.WriteFile(nestedValues, []byte("a: "+deep(8_000)+"\n"), 0o644)
	badValues := filepath.Join(h.dir, "bad-values.yaml")
	os.WriteFile(badValues, []byte("image: [unclosed\n"), 0o644)

	// CEL: a deployment definition whose values hold expressions that would
	// run for hours or build huge lists.
	cel := func(name, expr string) string {
		p := filepath.Join(h.dir, name+".yaml")
		def := "apiVersion: " + deployment.APIVersion + "\nkind: " + deployment.Kind + "\nmetadata: {name: " + name + "}\nspec:\n  renders:\n  - resource: {name: probe}\n    values:\n      x: \"${" + expr + "}\"\n"
		os.WriteFile(p, []byte(def), 0o644)
		return p
	}
	celRenderer := func() *argocdocm.Renderer {
		r := &argocdocm.Renderer{}
		argocdocm.SetPlanner(r, &deployment.DefinitionPlanner{})
		return r
	}
	celReq := func(def string) argocdocm.Request {
		r := h.hReq("probe")
		r.Resources, r.DefinitionFile = nil, def
		return r
	}

	noHits := func(t *testing.T) {
		if n := h.schemaHits.Load(); n != 0 {
			t.Errorf("the schema server got %d requests", n)
		}
	}
	withValues := func(f string) argocdocm.Request {
		r := h.hReq("probe")
		r.ValueFiles = []string{f}
		return r
	}
	withInline := func(v map[string]any) argocdocm.Request {
		r := h.hReq("probe")
		r.Values = v
		return r
	}
	withSetJSON := func(s string) argocdocm.Request {
		r := h.hReq("probe")
		r.SetJSON = []string{s}
		return r
	}
	// A definition with an object parameter, and one nested past the bound.
	objectDef := filepath.Join(h.dir, "object-param.yaml")
	os.WriteFile(objectDef, []byte("apiVersion: "+deployment.APIVersion+"\nkind: "+deployment.Kind+"\nmetadata: {name: obj}\nspec:\n  parameters:\n    cfg: {type: object}\n  renders:\n  - resource: {name: probe}\n"), 0o644)
	nestedDef := filepath.Join(h.dir, "nested-def.yaml")
	os.WriteFile(nestedDef, []byte("apiVersion: "+deployment.APIVersion+"\nkind: "+deployment.Kind+"\nmetadata: {name: nested}\nspec:\n  renders:\n  - resource: {name: probe}\n    values: {a: "+deep(8_000)+"}\n"), 0o644)
	withParam := func(def, name, value string) argocdocm.Request {
		r := celReq(def)
		r.Parameters = map[string]string{name: value}
		return r
	}
	tight := argocdocm.NewOfflineRenderer(archive.WithMaxSize(16 * MiB))
	unsafe, limit, render, invalid := errdef.ErrUnsafeArchive, errdef.ErrLimitExceeded, errdef.ErrRender, errdef.ErrInvalidInput
	badDesc := errdef.ErrInvalidDescriptor
	e := func(errs ...error) []error { return errs }

	return []hostileCase{
		// Archives (directoryTree resources).
		{name: "archive: path traversal", req: h.hReq("traversal"), want: e(unsafe), mentions: []string{"resource traversal", `"../../etc/passwd"`, "escapes"}},
		{name: "archive: absolute path", req: h.hReq("absolute"), want: e(unsafe), mentions: []string{"resource absolute", `"/etc/passwd"`, "absolute"}},
		{name: "archive: symlink escaping", req: h.hReq("symlink"), want: e(unsafe), mentions: []string{"resource symlink", `"cm.yaml"`, "escapes"}},
		{name: "archive: absolute symlink", req: h.hReq("abs-symlink"), want: e(unsafe), mentions: []string{`"cm.yaml"`, "absolute"}},
		{name: "archive: hardlink escaping", req: h.hReq("hardlink"), want: e(unsafe), mentions: []string{"resource hardlink", `"cm.yaml"`, "hardlink target"}},
		{name: "archive: character device", req: h.hReq("chardev"), want: e(unsafe), mentions: []string{`"null"`, "device files"}},
		{name: "archive: block device", req: h.hReq("blockdev"), want: e(unsafe), mentions: []string{`"sda"`, "device files"}},
		{name: "archive: FIFO", req: h.hReq("fifo"), want: e(unsafe), mentions: []string{`"pipe"`, "FIFO"}},
		{name: "decompression bomb: one entry over the size limit", req: h.hReq("bomb"), want: e(limit), mentions: []string{"resource bomb", `"bomb.yaml"`}, maxAlloc: 16 * MiB},
		{name: "decompression bomb: many entries over the total", r: tight, req: h.hReq("bomb-many"), want: e(limit), mentions: []string{"resource bomb-many", "part16.bin", "total size"}, maxAlloc: 64 * MiB},
		{name: "too many files", req: h.hReq("many-files"), want: e(limit), mentions: []string{"resource many-files", "more than 10000 entries"}, maxAlloc: 64 * MiB},

		// Descriptors and CTFs.
		{name: "huge descriptor (5 MiB)", req: comp(h.rawCTF(t, "huge-desc", withLabel(`"`+strings.Repeat("x", 5*MiB)+`"`))), want: e(limit), mentions: []string{hostileComponent + ":1.0.0", "limit"}, maxAlloc: 48 * MiB},
		{name: "dense descriptor under the byte limit (4 MiB flow list)", req: comp(h.rawCTF(t, "dense-desc", withLabel(dense(ocm.MaxDescriptorSize/2-1024)))), want: e(badDesc, limit), mentions: []string{"structural characters", "limit"}, maxAlloc: 48 * MiB},
		{name: "deeply nested YAML in a descriptor", req: comp(h.rawCTF(t, "deep-desc", withLabel(deep(10_001)))), want: e(badDesc), mentions: []string{"exceeded max depth of 10000"}, maxAlloc: 32 * MiB},
		{name: "YAML alias bomb in a descriptor", req: comp(h.rawCTF(t, "laughs-desc", v2+"  labels:\n  - name: x\n    value:\n"+laughs("      "))), want: e(badDesc), mentions: []string{"excessive aliasing"}, maxAlloc: 64 * MiB},
		{name: "malformed YAML descriptor", req: comp(h.rawCTF(t, "bad-desc", "meta: {schemaVersion: v2}\ncomponent: [this is: not a map\n")), want: e(badDesc), mentions: []string{hostileComponent + ":1.0.0"}},
		{name: "malformed JSON descriptor", req: comp(h.rawCTF(t, "bad-json-desc", `{"meta": {"schemaVersion": "v2"}, "component": {"name": 7}}`)), want: e(badDesc), mentions: []string{"cannot unmarshal number"}},
		{name: "malformed JSON CTF index", req: comp(badIndex), want: e(badDesc), mentions: []string{"artifact-index.json"}},
		{name: "malformed JSON OCI manifest", req: comp(badManifest), want: e(badDesc), mentions: []string{"manifest " + blob.Digest(mf)}},
		{name: "CTF blob that is a symlink", req: argocdocm.Request{Repository: linked, Component: hostileComponent, Version: "1.0.0"}, want: e(unsafe), mentions: []string{"resource manifests", "not a regular file"}},
		{name: "CTF tar with an escaping entry", req: comp(escTar), want: e(unsafe), mentions: []string{`"../../evil"`, "escapes"}},
		{name: "CTF tgz compression bomb (128 MiB of zeros)", req: comp(ctfBomb), want: e(limit), mentions: []string{"bomb.tgz", "expands more than 100 times"}, maxAlloc: 16 * MiB},
		{name: "CTF tgz with a symlink entry", req: comp(linkTar), want: e(unsafe), mentions: []string{`"blobs/sha256.link"`, "not a regular file"}},
		{name: "reference cycle", r: h.cycleRenderer(t), req: argocdocm.Request{Repository: h.cycleCTF(t), Component: "example.com/cycle/a", Version: "1.0.0"},
			want: e(errdef.ErrSignature, badDesc), mentions: []string{"reference cycle", "example.com/cycle/b:1.0.0", "example.com/cycle/a:1.0.0"}},

		// Manifests: YAML bombs and malformed documents.
		{name: "YAML bomb: dense manifest (4 MiB flow list)", req: h.hReq("dense-manifest"), want: e(render, invalid, limit), mentions: []string{"resource dense-manifest", "cm.yaml", "structural characters"}, maxAlloc: 48 * MiB},
		{name: "YAML bomb: 8 MiB of tiny documents in one file", req: h.hReq("tiny-docs"), want: e(render, limit), mentions: []string{"docs.yaml", "structural characters"}, maxAlloc: 48 * MiB},
		{name: "YAML bomb: tiny documents in many files", req: h.hReq("tiny-docs-files"), want: e(render, limit), mentions: []string{"resource tiny-docs-files", "more than 10000 objects in all"}, maxAlloc: 256 * MiB},
		{name: "deeply nested YAML in a manifest", req: h.hReq("deep-manifest"), want: e(render, invalid), mentions: []string{"deep.yaml", "exceeded max depth of 10000"}, maxAlloc: 32 * MiB},
		{name: "YAML alias bomb in a manifest", req: h.hReq("laughs-manifest"), want: e(render, invalid), mentions: []string{"laughs.yaml", "excessive aliasing"}, maxAlloc: 64 * MiB},
		{name: "malformed YAML manifest", req: h.hReq("bad-yaml"), want: e(render, invalid), mentions: []string{"bad.yaml", "document 1"}},
		{name: "malformed JSON manifest", req: h.hReq("bad-json"), want: e(render, invalid), mentions: []string{"bad.json"}},
		{name: "kustomize expansion bomb (2^40 builds)", req: h.hReq("kustomize-bomb"), want: e(render, limit), mentions: []string{"resource kustomize-bomb", "kustomization builds"}},

		// Nested past the nesting bound (128 levels), below the YAML
		// reader's 10,000: refused before the work that grows with the
		// depth (8,000 levels of values cost 550 MiB and 1.6 s before).
		{name: "values nested 8,000 deep", req: withInline(nestedMap(8_000)), want: e(invalid, limit), mentions: []string{"values: nested more than 128 levels deep"}, maxAlloc: 16 * MiB},
		{name: "values nested 129 deep", req: withInline(nestedMap(129)), want: e(invalid, limit), mentions: []string{"nested more than 128 levels deep"}, maxAlloc: 16 * MiB},
		{name: "values 20,000 keys wide (quadratic history before)", req: withInline(wideMap(20_000)), check: func(*testing.T, []manifests.Object) {}, maxAlloc: 128 * MiB},
		{name: "values file nested 8,000 deep", req: withValues(nestedValues), want: e(invalid, limit), mentions: []string{"values file " + nestedValues, "nested more than 128 levels deep"}, maxAlloc: 16 * MiB},
		{name: "--set-json nested 8,000 deep", req: withSetJSON("a=" + deep(8_000)), want: e(invalid, limit), mentions: []string{"nested more than 128 levels deep"}, maxAlloc: 32 * MiB},
		{name: "instance parameter nested 8,000 deep", r: celRenderer(), req: withParam(objectDef, "cfg", strings.Repeat("{a: ", 8_000)+"1"+strings.Repeat("}", 8_000)),
			want: e(invalid, limit), mentions: []string{"parameter cfg", "nested more than 128 levels deep"}, maxAlloc: 16 * MiB},
		{name: "deployment definition nested 8,000 deep", r: celRenderer(), req: celReq(nestedDef), want: e(invalid, limit), mentions: []string{"nested more than 128 levels deep"}, maxAlloc: 16 * MiB},
		{name: "descriptor label nested 8,000 deep", req: comp(h.rawCTF(t, "nested-desc", withLabel(deep(8_000)))), want: e(badDesc, limit), mentions: []string{"nested more than 128 levels deep"}, maxAlloc: 32 * MiB},
		{name: "manifest nested 8,000 deep", req: h.hReq("nested-manifest"), want: e(render, invalid, limit), mentions: []string{"nested.yaml", "nested more than 128 levels deep"}, maxAlloc: 32 * MiB},
		{name: "kustomize resource nested 8,000 deep", req: h.hReq("nested-kustomize"), want: e(render, limit), mentions: []string{"nested more than 128 levels deep"}, maxAlloc: 128 * MiB},
		{name: "chart values.yaml nested 8,000 deep", req: h.hReq("chart-nested-values"), want: e(render, limit), mentions: []string{"values.yaml", "nested more than 128 levels deep"}, maxAlloc: 32 * MiB},
		{name: "chart output nested 8,000 deep", req: h.hReq("chart-nested-output"), want: e(render, limit), mentions: []string{"nested more than 128 levels deep"}, maxAlloc: 64 * MiB},

		// Values files.
		{name: "deeply nested YAML in a values file", req: withValues(deepValues), want: e(invalid), mentions: []string{"values file " + deepValues, "exceeded max depth"}, maxAlloc: 32 * MiB},
		{name: "malformed values file", req: withValues(badValues), want: e(invalid), mentions: []string{"values file " + badValues}},

		// CEL.
		{name: "CEL expression exhausting CPU", r: celRenderer(), req: celReq(cel("cpu", "lists.range(100000).map(x, lists.range(100000).map(y, x * y)).size()")),
			want: e(limit), mentions: []string{"expression", "too much work"}},
		{name: "CEL expression exhausting memory", r: celRenderer(), req: celReq(cel("mem", "lists.range(100000).map(x, lists.range(100000))")),
			want: e(limit), mentions: []string{"expression"}, maxAlloc: 256 * MiB},

		// Helm charts.
		{name: "values.schema.json $ref to http://", req: h.hReq("schema-http"), want: e(render, unsafe), mentions: []string{"resource schema-http", "probe/values.schema.json", h.schemaURL}, after: noHits},
		{name: "values.schema.json $ref to file:///etc/passwd", req: h.hReq("schema-file"), want: e(render, unsafe), mentions: []string{"probe/values.schema.json", "file:///etc/passwd"}},
		{name: "chart using lookup, getHostByName, .Files outside itself, a symlink", req: h.hReq("probe"), check: checkProbe},
		{name: "chart archive entry outside the chart", req: h.hReq("chart-parent"), want: e(render), mentions: []string{"resource chart-parent", "parent directory"}},
		{name: "chart archive entry with an absolute path", req: h.hReq("chart-absolute"), want: e(render), mentions: []string{"absolute"}},
		{name: "chart with one 6 MiB file (renders, as with helm template of Helm 4)", req: h.hReq("chart-file-6mib"), check: func(t *testing.T, objs []manifests.Object) {
			if len(objs) == 0 {
				t.Error("no objects")
			}
		}, maxAlloc: 64 * MiB},
		{name: "chart file bomb (one 101 MiB file)", req: h.hReq("chart-file-bomb"), want: e(render), mentions: []string{"resource chart-file-bomb", "larger than the maximum size"}, maxAlloc: 160 * MiB},
		{name: "chart with 30 subchart archives of 4 MiB each", req: h.hReq("chart-subchart-bombs"), want: e(render, limit), mentions: []string{"subchart archives unpack to more than"}, maxAlloc: 320 * MiB},
		{name: "dense chart values.yaml (4 MiB flow list)", req: h.hReq("chart-dense-values"), want: e(render, limit), mentions: []string{"values.yaml has", "structural characters"}, maxAlloc: 64 * MiB},
		{name: "deeply nested chart values.yaml", req: h.hReq("chart-deep-values"), want: e(render), mentions: []string{"values.yaml", "exceeded max depth"}, maxAlloc: 32 * MiB},
	}
}

// checkProbe: lookup renders empty (no cluster), DNS resolves nothing, and
// no file outside the chart (or behind its symlink) was read.
func checkProbe(t *testing.T, objs []manifests.Object) {
	t.Helper()
	if len(objs) != 1 {
		t.Fatalf("%d objects", len(objs))
	}
	data, _ := objs[0]["data"].(map[string]any)
	want := map[string]any{"lookup": "{}", "lookupOne": "{}", "dns": "", "parent": "", "absolute": "", "link": "", "glob": "", "tpl": ""}
	for k, v := range want {
		if data[k] != v {
			t.Errorf("data.%s = %q, want %q", k, data[k], v)
		}
	}
	b, _ := yaml.Marshal(objs)
	if strings.Contains(string(b), "root:") {
		t.Errorf("/etc/passwd leaked:\n%s", b)
	}
}

// cycleCTF holds a -> b -> a, a signed; its digest of b is right, b's of a
// cannot be (it would need a hash fixed point) and does not matter: the cycle
// is found first.
func (h *hostileFixture) cycleCTF(t *testing.T) string {
	t.Helper()
	chart := hChart(t, map[string]string{"Chart.yaml": hChartYAML, "templates/cm.yaml": hCM})
	b := &ocmbuild.Component{Name: "example.com/cycle/b", Version: "1.0.0", References: []ocmbuild.Reference{{Name: "a", ComponentName: "example.com/cycle/a", Version: "1.0.0",
		Digest: &ocm.Digest{HashAlgorithm: "SHA-256", NormalisationAlgorithm: "jsonNormalisation/v3", Value: strings.Repeat("0", 64)}}}}
	bRaw, err := b.DescriptorYAML()
	if err != nil {
		t.Fatal(err)
	}
	bd, err := ocm.DecodeDescriptor(bRaw)
	if err != nil {
		t.Fatal(err)
	}
	bDigest, err := signing.Digest(bd, "jsonNormalisation/v3", "SHA-256")
	if err != nil {
		t.Fatal(err)
	}
	a := &ocmbuild.Component{Name: "example.com/cycle/a", Version: "1.0.0",
		Resources:  []ocmbuild.Resource{{Name: "chart", Type: "helmChart", MediaType: ocmbuild.MediaTypeHelmChart, Data: chart}},
		References: []ocmbuild.Reference{{Name: "b", ComponentName: b.Name, Version: "1.0.0", Digest: &ocm.Digest{HashAlgorithm: "SHA-256", NormalisationAlgorithm: "jsonNormalisation/v3", Value: bDigest}}}}
	if err := a.Sign("release", cycleKey(t)); err != nil {
		t.Fatal(err)
	}
	a.Blobs = []ocmbuild.Blob{{MediaType: ocmbuild.MediaTypeHelmChart, Data: chart}}
	dir := filepath.Join(h.dir, "cycle")
	if err := ocmbuild.WriteCTF(dir, a, b); err != nil {
		t.Fatal(err)
	}
	return dir
}

var hCycleKey *rsa.PrivateKey

func cycleKey(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	if hCycleKey == nil {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		hCycleKey = k
	}
	return hCycleKey
}

func (h *hostileFixture) cycleRenderer(t *testing.T) *argocdocm.Renderer {
	r := &argocdocm.Renderer{}
	r.SetSignatures(&signing.Verifier{Keys: map[string]crypto.PublicKey{"release": &cycleKey(t).PublicKey}})
	return r
}

// allocated returns the bytes allocated (by every goroutine) while f runs: an
// upper bound of how much the heap can have grown.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
