package oci

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

func TestParseSpec(t *testing.T) {
	dir := t.TempDir()
	bundle := filepath.Join(dir, "bundle.ctf")
	os.Mkdir(bundle, 0o755)
	cases := []struct {
		in         string
		typ        string
		loc        location
		file, text string
		err        error
	}{
		{in: "ghcr.io/org/ocm", typ: TypeOCIRegistry, loc: location{host: "ghcr.io", prefix: "org/ocm"}},
		{in: "https://ghcr.io/org/ocm/", typ: TypeOCIRegistry, loc: location{scheme: "https", host: "ghcr.io", prefix: "org/ocm"}},
		{in: "http://127.0.0.1:5000/ocm", typ: TypeOCIRegistry, loc: location{scheme: "http", host: "127.0.0.1:5000", prefix: "ocm"}, text: "http://127.0.0.1:5000/ocm"},
		{in: "oci://Registry.Example.com:443", typ: TypeOCIRegistry, loc: location{host: "registry.example.com:443"}},
		{in: "OCIRegistry::ghcr.io/org", typ: TypeOCIRegistry, loc: location{host: "ghcr.io", prefix: "org"}},
		{in: "type: OCIRegistry\nbaseUrl: http://127.0.0.1:5078\nsubPath: ocm\ncomponentNameMapping: urlPath\n", typ: TypeOCIRegistry,
			loc: location{scheme: "http", host: "127.0.0.1:5078", prefix: "ocm"}},
		{in: `{"type":"OCIRegistry/v1","baseUrl":"ghcr.io/org","subPath":"/team/ocm/"}`, typ: TypeOCIRegistry, loc: location{host: "ghcr.io", prefix: "org/team/ocm"}},
		{in: `{"type":"ociRegistry","baseUrl":"ghcr.io","legacyTypes":true}`, typ: TypeOCIRegistry, loc: location{host: "ghcr.io"}},
		{in: `{"type":"OCI/v1","baseUrl":"ghcr.io"}`, typ: TypeOCIRegistry, loc: location{host: "ghcr.io"}},
		{in: "type: CommonTransportFormat/v1\nfilePath: ./bundle.ctf\nfileFormat: directory\naccessMode: 1\n", typ: TypeCTF, file: "./bundle.ctf"},
		{in: "ctf::./x.tgz", typ: TypeCTF, file: "./x.tgz"},
		{in: "./bundle", typ: TypeCTF, file: "./bundle"},
		{in: "/abs/path", typ: TypeCTF, file: "/abs/path"},
		{in: "file:///abs/path", typ: TypeCTF, file: "/abs/path"},
		{in: bundle, typ: TypeCTF, file: bundle},
		// hostile or unsupported
		{in: "", err: errdef.ErrInvalidInput},
		{in: "ftp://host/x", err: errdef.ErrInvalidInput},
		{in: "https://user:pass@ghcr.io/org", err: errdef.ErrInvalidInput},
		{in: "ghcr.io/org/../x", err: errdef.ErrInvalidInput},
		{in: "ghcr.io/org?x=1", err: errdef.ErrInvalidInput},
		{in: `{"type":"OCIRegistry","baseUrl":"ghcr.io","subPath":"../../x"}`, err: errdef.ErrInvalidInput},
		{in: `{"type":"OCIRegistry","baseUrl":"ghcr.io","componentNameMapping":"sha256-digest"}`, err: errdef.ErrInvalidInput},
		{in: `{"type":"OCIRegistry"}`, err: errdef.ErrInvalidInput},
		{in: `{"type":"S3","bucket":"x"}`, err: errdef.ErrInvalidInput},
		{in: `{"baseUrl":"ghcr.io"}`, err: errdef.ErrInvalidInput},
		{in: `{"type":"CommonTransportFormat"}`, err: errdef.ErrInvalidInput},
		{in: "{not json", err: errdef.ErrInvalidInput},
		{in: "gitlab::x", err: errdef.ErrInvalidInput},
		{in: strings.Repeat("a", maxSpecLen+1), err: errdef.ErrInvalidInput},
	}
	for _, c := range cases {
		name := c.in
		if len(name) > 60 {
			name = name[:60]
		}
		t.Run(name, func(t *testing.T) {
			sp, err := ParseSpec(c.in)
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("got %+v, %v; want %v", sp, err, c.err)
				}
				return
			}
			if err != nil || sp.Type != c.typ {
				t.Fatalf("got %+v, %v", sp, err)
			}
			if c.typ == TypeCTF {
				if sp.FilePath != c.file {
					t.Fatalf("file %q, want %q", sp.FilePath, c.file)
				}
				return
			}
			loc, err := sp.location()
			if err != nil || loc != c.loc {
				t.Fatalf("location %+v, %v; want %+v", loc, err, c.loc)
			}
			if c.text != "" && sp.String() != c.text {
				t.Fatalf("String %q, want %q", sp.String(), c.text)
			}
		})
	}
}

func TestNewRefusesCTF(t *testing.T) {
	if _, err := New("ctf::./x", WithCache(nil)); !errors.Is(err, errdef.ErrInvalidInput) {
		t.Fatal(err)
	}
}

// A value is a registry only when it looks like one; anything else is a
// path, so a mistyped CTF says it does not exist instead of a DNS lookup.
func TestRegistryOrPath(t *testing.T) {
	none := func(string) bool { return false }
	for _, in := range []string{
		"localhost:5000/x", "localhost/x", "LOCALHOST", "ghcr.io/x", "ghcr.io", "registry:5000/ocm", "127.0.0.1:5000/ocm",
		"http://host/x", "https://host", "oci://host/x", "OCIRegistry::host/x",
		"{type: OCIRegistry, baseUrl: host}", "type: OCIRegistry\nbaseUrl: host\n", "registry.example.com/ocm/bundle.tgz",
	} {
		sp, err := ParseSpecIn(in, none)
		if err != nil || sp.Type != TypeOCIRegistry {
			t.Errorf("%q: %+v, %v: want a registry", in, sp, err)
		}
	}
	for _, in := range []string{
		"testdata/demo/ctff", "ctf", "my-ctf", "bundle.tgz", "bundle.tar.gz", "ctf.tar", "transport.ctf", "apps/team-a/ctf",
		"\u2024\u2024/x", "ctf::bundle", "file://ctf", "./ghcr.io/x", "{type: CTF, filePath: ghcr.io}",
	} {
		sp, err := ParseSpecIn(in, none)
		if err != nil || sp.Type != TypeCTF {
			t.Errorf("%q: %+v, %v: want a path", in, sp, err)
		}
	}
	// A name that exists is a path even when it looks like a registry: only
	// exists is asked, never the process's disk.
	sp, err := ParseSpecIn("ghcr.io/x", func(name string) bool { return name == "ghcr.io/x" })
	if err != nil || sp.Type != TypeCTF {
		t.Fatalf("existing name: %+v, %v", sp, err)
	}
}

// A registry host no registry can have (percent-encoded, with an IPv6
// zone) is refused as such, before any connection: it read "version 1.0.0
// of component … cannot be an OCI tag" (issue 35). A bracketed IPv6 host
// is a registry, not a repository type ("[fd00::1]:5000" holds "::").
func TestInvalidRegistryHostIsNamed(t *testing.T) {
	for _, spec := range []string{"http://reg%2eexample.com/x", "http://[fe80::1%25eth0]:5000/x", "[fd00::1%eth0]:5000/x"} {
		r, err := New(spec, WithCache(nil))
		if err == nil {
			_, err = r.LookupComponentVersion(t.Context(), "example.com/demo/podinfo", "1.0.0")
		}
		if !errors.Is(err, errdef.ErrInvalidInput) || !strings.Contains(err.Error(), "invalid registry") || strings.Contains(err.Error(), "OCI tag") {
			t.Errorf("%s: %v, want the registry named as invalid", spec, err)
		}
	}
	sp, err := ParseSpec("[fd00::1]:5000/x")
	if err != nil || sp.Type != TypeOCIRegistry {
		t.Errorf("[fd00::1]:5000/x: %+v, %v; want a registry", sp, err)
	}
}

// What parsePlainJSONSpec accepts, the YAML decoder reads to the same Spec;
// the rest it leaves to the YAML decoder. Either way ParseSpecIn answers as
// the YAML decoder alone would, errors included.
func TestPlainJSONSpecIsTheDocuments(t *testing.T) {
	explicit, err := json.Marshal(Spec{Type: TypeOCIRegistry, BaseURL: "http://127.0.0.1:5000", SubPath: "a/b<c>&d", ComponentNameMapping: "urlPath"})
	if err != nil {
		t.Fatal(err)
	}
	plain := []string{
		`{"type":"OCIRegistry","baseUrl":"http://127.0.0.1:5000/ocm"}`,
		`{"type":"OCIRegistry","baseUrl":"ghcr.io","subPath":"org/ocm","componentNameMapping":"urlPath"}`,
		`{ "type" : "CommonTransportFormat/v1" , "filePath" : "./bundle.ctf" }`,
		`{"type":"ctf","filePath":"a b # c: {d} [e] 'f' & *g !h %i @j` + "`" + `"}`,
		`{"type":"OCIRegistry","baseUrl":"ghcr.io","componentNameMapping":"sha256-digest"}`,
		`{"type":"OCIRegistry"}`,
		`{"type":"OCIRegistry","baseUrl":""}`,
		`{"type":"","baseUrl":"ghcr.io"}`,
		`{}`,
	}
	other := []string{
		string(explicit), // json.Marshal escapes <, > and &
		`{"type":"OCIRegistry","baseUrl":"ghcr.io","type":"CTF"}`,
		`{"TYPE":"CTF","type":"OCIRegistry","baseUrl":"ghcr.io"}`,
		`{"Type":"OCIRegistry","BaseURL":"ghcr.io"}`,
		`{"<<":{"type":"OCIRegistry","baseUrl":"ghcr.io"}}`,
		`{"type":"OCIRegistry","baseUrl":"gh\u0063r.io"}`,
		`{"type":"OCIRegistry","baseUrl":"gh\/cr.io"}`,
		`{"type":"OCIRegistry","baseUrl":"\ud800"}`,
		"{\"type\":\"OCIRegistry\",\"baseUrl\":\"ghcr.io\xff\"}",
		"{\"type\":\"OCIRegistry\",\"baseUrl\":\"ghcr.io\u00e9\"}",
		"{\"type\":\"OCIRegistry\",\t\"baseUrl\":\"ghcr.io\"}",
		`{"type":"OCIRegistry","baseUrl":null}`,
		`{"type":"OCIRegistry","baseUrl":5000}`,
		`{"type":"OCIRegistry","baseUrl":["ghcr.io"]}`,
		`{"type":"OCIRegistry","baseUrl":{"host":"ghcr.io"}}`,
		`{"type":"OCIRegistry","baseUrl":"ghcr.io","extra":"x"}`,
		`{"type":"OCIRegistry","baseUrl":"ghcr.io",}`,
		`{"type":"OCIRegistry" "baseUrl":"ghcr.io"}`,
		`{"type":"OCIRegistry","baseUrl":"ghcr.io"}}`,
		`{"type":"OCIRegistry","baseUrl":"ghcr.io"} {}`,
		`{"type":"OCIRegistry","baseUrl":"ghcr.io"`,
		`{type: OCIRegistry, baseUrl: ghcr.io}`,
		`{"type":'OCIRegistry',"baseUrl":"ghcr.io"}`,
		`{"type":"OCIRegistry","baseUrl":"ghcr.io" # comment` + "\n}",
	}
	for i, s := range append(plain, other...) {
		sp, ok := parsePlainJSONSpec(s)
		if ok != (i < len(plain)) {
			t.Errorf("%s: plain %v, want %v", s, ok, i < len(plain))
		}
		if ok {
			var want Spec
			if err := yaml.Unmarshal([]byte(s), &want); err != nil || sp != want {
				t.Errorf("%s: %+v, the YAML decoder's %+v (%v)", s, sp, want, err)
			}
		}
		got, gotErr := ParseSpecIn(s, func(string) bool { return false })
		want, wantErr := parseSpecDocument(s)
		if got != want || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Errorf("%s: %+v %v, the YAML decoder's %+v %v", s, got, gotErr, want, wantErr)
		}
	}
}
