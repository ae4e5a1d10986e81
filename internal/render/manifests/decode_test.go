package manifests_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/yamlfile"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
)

// splitDocs splits platformManifest output at its "---" lines.
func splitDocs(stream []byte) []string {
	docs := strings.Split(string(stream), "---\n")
	return docs[1:] // the stream starts with a separator
}

// TestDecodeLargeStreams: streams large enough to be decoded in parallel
// give the reference's objects, and the reference's error for the first
// failing document, whichever document fails and however many.
func TestDecodeLargeStreams(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Log("GOMAXPROCS is 1: documents are decoded one after the other")
	}
	docs := splitDocs(platformManifest(40))
	join := func(docs []string) []byte { return []byte("---\n" + strings.Join(docs, "---\n")) }
	with := func(repl map[int]string) []byte {
		d := append([]string(nil), docs...)
		for i, s := range repl {
			d[i] = s
		}
		return join(d)
	}
	bad := "apiVersion: v1\nkind: [\n"
	noKind := "apiVersion: v1\nmetadata: {name: x}\n"
	huge := "apiVersion: v1\nkind: K\nv: [" + strings.Repeat("0,", manifests.MaxDocumentNodes) + "0]\n"
	list := "apiVersion: v1\nkind: List\nitems:\n" + strings.Repeat("- {apiVersion: v1, kind: K}\n", 2100)
	for _, tc := range []struct {
		name string
		in   []byte
		msg  string // of the error, "" for none
	}{
		{"all fine", join(docs), ""},
		{"last document", with(map[int]string{len(docs) - 1: bad}), fmt.Sprintf("document %d: invalid YAML", len(docs))},
		{"first document", with(map[int]string{0: noKind}), "document 1: object has no kind"},
		{"first of several", with(map[int]string{150: bad, 100: noKind, 200: bad, 3: "{}"}), "document 4: object has no apiVersion and no kind"},
		{"document too large", with(map[int]string{120: huge, 180: bad}), "document 121: document starting at line"},
		{"too many objects", with(map[int]string{10: list, 20: list, 30: list, 40: list, 50: list, 60: bad}),
			fmt.Sprintf("more than %d objects", manifests.MaxObjects)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := manifests.Decode("in.yaml", tc.in)
			switch {
			case tc.msg == "" && (err != nil || len(objs) != len(docs)):
				t.Fatalf("%d objects, %v; want %d", len(objs), err, len(docs))
			case tc.msg != "" && (err == nil || !strings.Contains(err.Error(), tc.msg) || objs != nil):
				t.Fatalf("err = %v, want it to contain %q", err, tc.msg)
			}
			checkReference(t, tc.in)
		})
	}
}

// TestDecodeDocumentsIndependent: objects decoded from one document share
// nothing with objects of another (post-processors change objects in place),
// even where YAML aliases repeat a node.
func TestDecodeDocumentsIndependent(t *testing.T) {
	in := platformManifest(10)
	in = append(in, "---\napiVersion: v1\nkind: K\nmetadata: &m {name: a, labels: &l {x: z}}\nspec: {m: *m, l: *l, list: &s [1, {a: b}], again: *s}\n"...)
	objs, err := manifests.Decode("in.yaml", in)
	if err != nil {
		t.Fatal(err)
	}
	last := objs[len(objs)-1]
	last["metadata"].(map[string]any)["labels"].(map[string]any)["x"] = "changed"
	last["spec"].(map[string]any)["list"].([]any)[1].(map[string]any)["a"] = "changed"
	spec := last["spec"].(map[string]any)
	if got := spec["l"].(map[string]any)["x"]; got != "z" {
		t.Errorf("alias shares a map: %v", got)
	}
	if got := spec["again"].([]any)[1].(map[string]any)["a"]; got != "b" {
		t.Errorf("alias shares a list: %v", got)
	}
	objs[1]["metadata"].(map[string]any)["labels"].(map[string]any)["team"] = "changed"
	if got := objs[2]["metadata"].(map[string]any)["labels"].(map[string]any)["team"]; got != "platform" {
		t.Errorf("documents share a map: %v", got)
	}
}

// TestDecodeFixtures: on every YAML and JSON file of the repository's test
// data (the OCM CLI fixtures included), examples and install manifests, and of
// the real-world charts' reference outputs in ../shared when present, Decode
// gives what the reference gives, and what it decodes goes through EncodeJSON
// as through Encode.
func TestDecodeFixtures(t *testing.T) {
	files := manifestFiles(t, "../../../testdata", "../../../docs", "../../../manifests")
	if len(files) < 30 {
		t.Fatalf("only %d fixture files found", len(files))
	}
	if decoded := checkDecodeFiles(t, files); decoded < 10 {
		t.Errorf("only %d of %d fixture files hold manifests", decoded, len(files))
	}

	// The real-world goldens (helm template / kustomize build of third-party
	// charts): the full 15 MB beside the repository, else the subset in it.
	t.Run("realworld", func(t *testing.T) {
		dir := manifests.RealWorldDir()
		if _, err := os.Stat(dir); err != nil {
			t.Skipf("SKIP: real-world chart outputs not found at %s (the team's shared fixtures beside the repository): %v", dir, err)
		}
		files := manifestFiles(t, dir)
		if decoded := checkDecodeFiles(t, files); decoded == 0 {
			t.Errorf("none of %d real-world files hold manifests", len(files))
		}
	})
}

// manifestFiles lists the YAML and JSON files under dirs.
func manifestFiles(t *testing.T, dirs ...string) []string {
	t.Helper()
	var files []string
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Type().IsRegular() && manifests.IsManifestFile(p) {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return files
}

// checkDecodeFiles compares Decode with the reference on each file and
// returns how many hold manifests.
func checkDecodeFiles(t *testing.T, files []string) int {
	t.Helper()
	decoded := 0
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(strings.TrimLeft(p, "./"), func(t *testing.T) {
			checkReference(t, data)
			objs, err := manifests.Decode("in.yaml", data)
			if err != nil || len(objs) == 0 {
				return // not manifests (a chart template, a descriptor): compared above
			}
			decoded++
			var out bytes.Buffer
			if err := manifests.EncodeJSON(&out, objs); err != nil {
				t.Fatal(err)
			}
			checkSameAsEncode(t, objs, out.Bytes())
		})
	}
	return decoded
}

// TestDecodeConversions: each conversion Decode makes from YAML values to
// JSON values gives the reference's value (see FuzzDecodeReference for
// arbitrary input).
func TestDecodeConversions(t *testing.T) {
	for _, s := range decodeSeeds {
		checkReference(t, []byte(s))
	}
	objs, err := manifests.Decode("in.yaml", []byte(seedNumbers))
	if err != nil {
		t.Fatal(err)
	}
	want := []any{int64(1), int64(0), int64(1000), 1e19, int64(-1 << 63), int64(1<<63 - 1), 9223372036854775808.0, 18446744073709551615.0,
		1e-7, 0.1, 1e21, int64(31), int64(15), int64(15), int64(1000), int64(5), 0.5, int64(5), "1e400"}
	if got := objs[0]["v"]; !reflect.DeepEqual(got, want) {
		t.Errorf("numbers = %#v\nwant      %#v", got, want)
	}
	objs, err = manifests.Decode("in.yaml", []byte(seedKeys))
	if err != nil {
		t.Fatal(err)
	}
	wantKeys := map[string]any{"1": "a", "true": "e", "1.5": "c", "16": "d", ".inf": "g" /* as a float32 */}
	if got := objs[0]["data"]; !reflect.DeepEqual(got, wantKeys) {
		t.Errorf("keys = %#v\nwant   %#v", got, wantKeys)
	}
	for _, in := range []string{seedInf, seedNaN, seedNullKey, seedUint64Key} { // refused by YAMLToJSON
		if _, err := manifests.Decode("in.yaml", []byte(in)); !errors.Is(err, errdef.ErrInvalidInput) || !strings.Contains(err.Error(), "document 1: invalid YAML") {
			t.Errorf("%q: err = %v", in, err)
		}
	}
}

// TestDecodeDocumentBoundAtTheLimit: a stream of one document is held to
// the document's bound whether or not the stream is under it (documents
// of a stream under MaxDocumentNodes are not counted again).
func TestDecodeDocumentBoundAtTheLimit(t *testing.T) {
	doc := func(nodes int) []byte { // nodes structural characters
		return []byte("apiVersion: v1\nkind: K\na: [" + strings.Repeat("1,", nodes-7) + "1]\n")
	}
	for _, tc := range []struct {
		nodes int
		fails bool
	}{{manifests.MaxDocumentNodes - 1, false}, {manifests.MaxDocumentNodes, false}, {manifests.MaxDocumentNodes + 1, true}} {
		objs, err := manifests.Decode("in.yaml", doc(tc.nodes))
		if tc.fails {
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("document starting at line 1 has %d structural characters", tc.nodes)) {
				t.Errorf("%d structural characters: err = %v, want the document's bound", tc.nodes, err)
			}
			continue
		}
		if err != nil || len(objs) != 1 {
			t.Errorf("%d structural characters: %d objects, %v; want 1", tc.nodes, len(objs), err)
		}
	}
}

// DecodeCounted with the text's own count (or -1) is Decode, at the
// document's and the stream's bounds; the count it is given is the one the
// bounds are held to.
func TestDecodeCountedIsDecode(t *testing.T) {
	doc := func(nodes int) []byte {
		return []byte("apiVersion: v1\nkind: K\na: [" + strings.Repeat("1,", nodes-7) + "1]\n")
	}
	stream := func(docs int) []byte {
		return bytes.Repeat(append([]byte("---\n"), doc(manifests.MaxDocumentNodes-100)...), docs)
	}
	for _, data := range [][]byte{
		doc(manifests.MaxDocumentNodes), doc(manifests.MaxDocumentNodes + 1),
		stream(3), stream(5), // under and over MaxStreamNodes
		[]byte("\xef\xbb\xbfa: [1, 2]\n---\nb: {c: d}\n"), []byte("kind: [\n"),
	} {
		want, wantErr := manifests.Decode("in.yaml", data)
		for _, n := range []int{yamlfile.StructureCount(data), -1} {
			got, err := manifests.DecodeCounted("in.yaml", data, n)
			if fmt.Sprint(err) != fmt.Sprint(wantErr) || !reflect.DeepEqual(got, want) {
				t.Fatalf("%d bytes, count %d: %d objects, %v; Decode: %d objects, %v", len(data), n, len(got), err, len(want), wantErr)
			}
		}
	}
	if _, err := manifests.DecodeCounted("in.yaml", []byte("a: b\n"), manifests.MaxStreamNodes+1); err == nil || !strings.Contains(err.Error(), "more than the limit") {
		t.Fatalf("the given count was not used: %v", err)
	}
}
