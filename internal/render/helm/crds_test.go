package helm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/yamlfile"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
)

// The cache holds at most its bound of CRD text, dropping the least recently
// used files first, and decodes what it does not hold.
func TestCRDCacheBound(t *testing.T) {
	text := func(i int) []byte {
		return fmt.Appendf(nil, "---\n# Source: c/crds/%d.yaml\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: k%03d.example.com\n", i, i)
	}
	size := int64(len(text(0)))
	c := NewCRDCache(3 * entryCost(size))
	for i := 0; i < 3; i++ {
		if _, err := c.decode("chart c", text(i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.decode("chart c", text(0)); err != nil { // 0 is now the most recent
		t.Fatal(err)
	}
	if _, err := c.decode("chart c", text(3)); err != nil { // evicts 1
		t.Fatal(err)
	}
	if c.kept.Len() != 3 || c.kept.Size() > c.kept.Max() {
		t.Fatalf("%d entries, %d bytes (bound %d)", c.kept.Len(), c.kept.Size(), c.kept.Max())
	}
	for i, held := range []bool{true, false, true, true} {
		key := sha(text(i))
		if _, ok := c.kept.Peek(key); ok != held {
			t.Errorf("file %d held: %v, want %v", i, ok, held)
		}
	}
	// A file larger than the bound is decoded, never held.
	big := append(text(9), []byte("# "+strings.Repeat("padding ", int(c.kept.Max()/8)))...)
	if _, err := c.decode("chart c", big); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.kept.Peek(sha(big)); ok || c.kept.Size() > c.kept.Max() {
		t.Fatalf("a file over the bound was kept (%d bytes held)", c.kept.Size())
	}
	// Decoding errors are returned and nothing is kept.
	if _, err := c.decode("chart c", []byte("---\nkind: [\n")); err == nil {
		t.Fatal("no error for invalid YAML")
	}
	if c.kept.Len() != 3 {
		t.Fatalf("%d entries after an error", c.kept.Len())
	}
}

func sha(b []byte) [32]byte { return sha256.Sum256(b) }

// CRDs are decoded while Helm renders, from every subchart: a broken crds/
// file of a disabled subchart is not an error (Helm leaves it out), one of
// an enabled subchart is; the objects are those of the enabled charts, CRDs
// first, in Helm's order.
func TestPredecodedCRDsOfDisabledSubchart(t *testing.T) {
	crd := func(name string) []byte {
		return fmt.Appendf(nil, "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: %s\n", name)
	}
	files := map[string][]byte{
		"Chart.yaml":               []byte("apiVersion: v2\nname: top\nversion: 1.0.0\ndependencies:\n  - name: sub\n    version: 1.0.0\n    condition: sub.enabled\n"),
		"values.yaml":              []byte("sub:\n  enabled: false\n"),
		"crds/top.yaml":            crd("tops.example.com"),
		"templates/cm.yaml":        []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n"),
		"charts/sub/Chart.yaml":    []byte("apiVersion: v2\nname: sub\nversion: 1.0.0\n"),
		"charts/sub/crds/bad.yaml": []byte("apiVersion: v1\nkind: [\n"),
	}
	tgz, err := ocmbuild.PackageChart(files)
	if err != nil {
		t.Fatal(err)
	}
	for _, crds := range []*CRDCache{nil, NewCRDCache(0)} {
		objs, err := Render(context.Background(), tgz, Options{CRDs: crds})
		if err != nil {
			t.Fatalf("disabled subchart with a broken CRD file: %v", err)
		}
		var keys []string
		for _, o := range objs {
			keys = append(keys, manifests.Key(o))
		}
		if got := strings.Join(keys, " "); got != "apiextensions.k8s.io/CustomResourceDefinition//tops.example.com /ConfigMap//cm" {
			t.Fatalf("objects %s", got)
		}
		_, err = Render(context.Background(), tgz, Options{CRDs: crds, Values: map[string]any{"sub": map[string]any{"enabled": true}}})
		if !errors.Is(err, errdef.ErrRender) || !strings.Contains(err.Error(), "invalid YAML") {
			t.Fatalf("enabled subchart with a broken CRD file: %v", err)
		}
	}
}

// Of rendered documents, only those holding nothing but
// CustomResourceDefinitions are kept; the others (an Application's
// configuration) are decoded every time.
func TestCRDCacheKeepsOnlyCRDDocuments(t *testing.T) {
	c := NewCRDCache(0)
	stream := "---\n# Source: c/templates/crd.yaml\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: a.example.com\n" +
		"---\n# Source: c/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  x: |\n    kind: CustomResourceDefinition\n" +
		"---\n# Source: c/templates/list.yaml\napiVersion: v1\nkind: List\nitems:\n  - apiVersion: apiextensions.k8s.io/v1\n    kind: CustomResourceDefinition\n    metadata: {name: b.example.com}\n  - apiVersion: v1\n    kind: Secret\n    metadata: {name: s}\n"
	for i := 0; i < 2; i++ {
		objs, err := manifests.DecodeWith("chart c", []byte(stream), c.document)
		if err != nil {
			t.Fatal(err)
		}
		if len(objs) != 4 || manifests.Key(objs[0]) != "apiextensions.k8s.io/CustomResourceDefinition//a.example.com" || manifests.Key(objs[3]) != "/Secret//s" {
			t.Fatalf("render %d: %d objects", i, len(objs))
		}
		objs[0]["metadata"].(map[string]any)["name"] = "changed"
	}
	if c.kept.Len() != 1 {
		t.Fatalf("%d documents kept, want 1 (the CRD alone)", c.kept.Len())
	}
	for _, kept := range c.kept.Values() {
		if manifests.Key(kept.objs[0]) != "apiextensions.k8s.io/CustomResourceDefinition//a.example.com" {
			t.Fatalf("kept %s", manifests.Key(kept.objs[0]))
		}
	}
}

// A kept rendered document gives its objects only to its very text: not to
// another text under the same key (a collision of the seeded hash, forced
// here), nor to a crds/ file's lookup under that key, nor the other way
// round.
func TestCRDCacheDocumentsNeedTheirText(t *testing.T) {
	c := NewCRDCache(0)
	crd := func(name string) []byte {
		return fmt.Appendf(nil, "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: %s\n", name)
	}
	a, b := crd("a.example.com"), crd("b.example.com")
	decodeA := func() ([]manifests.Object, error) { return manifests.Decode("a", a) }
	if _, err := c.document(a, decodeA); err != nil {
		t.Fatal(err)
	}
	key := c.docKey(a)
	if objs, ok := c.get(key, a); !ok || manifests.Key(objs[0]) != "apiextensions.k8s.io/CustomResourceDefinition//a.example.com" {
		t.Fatalf("kept document not found by its text: %v", objs)
	}
	if objs, ok := c.get(key, b); ok {
		t.Fatalf("another text under the same key got %s", manifests.Key(objs[0]))
	}
	if _, ok := c.get(key, nil); ok {
		t.Fatal("a crds/ file's lookup got a rendered document's objects")
	}
	fileKey := sha256.Sum256(b)
	bObjs, err := manifests.Decode("b", b)
	if err != nil {
		t.Fatal(err)
	}
	c.put(fileKey, bObjs, nil, int64(len(b)))
	if _, ok := c.get(fileKey, b); ok {
		t.Fatal("a rendered document got a crds/ file's objects")
	}
	if k2 := NewCRDCache(0).docKey(a); k2 == key {
		t.Error("two caches key a document alike: the hash is not seeded")
	}
}

// crdChart is a chart with a CRD of a nested schema in crds/ (named name,
// its description desc) and the same CRD file in a subchart used under two
// aliases, so that one file is printed under two names.
func crdChart(t *testing.T, name, desc string) []byte {
	t.Helper()
	crd := func(name string) []byte {
		return fmt.Appendf(nil, "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: %s\n  labels: {team: a}\n"+
			"spec:\n  group: example.com\n  versions:\n    - name: v1\n      schema:\n        openAPIV3Schema:\n          type: object\n"+
			"          required: [spec]\n          properties:\n            spec: {type: object, description: %q}\n", name, desc)
	}
	tgz, err := ocmbuild.PackageChart(map[string][]byte{
		"Chart.yaml": []byte("apiVersion: v2\nname: top\nversion: 1.0.0\ndependencies:\n" +
			"  - {name: sub, version: 1.0.0, alias: one}\n  - {name: sub, version: 1.0.0, alias: two}\n"),
		"crds/top.yaml":          crd(name),
		"templates/cm.yaml":      []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n"),
		"charts/sub/Chart.yaml":  []byte("apiVersion: v2\nname: sub\nversion: 1.0.0\n"),
		"charts/sub/crds/s.yaml": crd("subs.example.com"),
	})
	if err != nil {
		t.Fatal(err)
	}
	return tgz
}

// tamper changes every map and list of v in place, as a hostile or careless
// post-processing step could.
func tamper(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			tamper(e)
			if s, ok := e.(string); ok {
				v[k] = s + "-tampered"
			}
		}
		v["tampered"] = true
	case []any:
		for i, e := range v {
			tamper(e)
			if s, ok := e.(string); ok {
				v[i] = s + "-tampered"
			}
		}
	}
}

// Renders through shared caches (the render server's: one CRDCache and
// one ChartCache for all Applications) never see what an earlier render
// did to its objects, nor another chart's CRDs: every render of a cached
// chart equals a render without caches, after each render changed every
// object it got, for two charts whose crds/ files have the same names.
func TestCachedCRDsIsolateRenders(t *testing.T) {
	charts := map[string][]byte{
		"a": crdChart(t, "tops.example.com", "tenant a"),
		"b": crdChart(t, "tops.example.com", "tenant b"),
	}
	want := map[string][]manifests.Object{}
	for name, tgz := range charts {
		objs, err := Render(context.Background(), tgz, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(objs) != 4 { // top, one's and two's CRD, the ConfigMap
			t.Fatalf("chart %s: %d objects", name, len(objs))
		}
		want[name] = objs
	}
	opts := Options{CRDs: NewCRDCache(0), Charts: NewChartCache(0)}
	for i := 0; i < 3; i++ {
		for _, name := range []string{"a", "b"} {
			got, err := Render(context.Background(), charts[name], opts)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want[name]) {
				t.Fatalf("render %d of chart %s through the caches:\n%v\nwant\n%v", i, name, got, want[name])
			}
			for _, o := range got {
				tamper(o)
			}
		}
	}
	// Per chart: the top CRD; the subchart's file as predecoded (under
	// the subchart's own name, taken by the first alias: the aliases share
	// the *common.File) and as printed for the second alias.
	if opts.CRDs.kept.Len() != 6 {
		t.Fatalf("%d CRD files kept, want 6", opts.CRDs.kept.Len())
	}
}

// What renders of a cached chart learn about its crds/ files (crdPrints)
// is what printing, counting and hashing each file gives, under the name
// it is printed with.
func TestCRDPrintsOfCachedChart(t *testing.T) {
	tgz := crdChart(t, "tops.example.com", "a")
	opts := Options{CRDs: NewCRDCache(0), Charts: NewChartCache(0)}
	for i := 0; i < 2; i++ {
		if _, err := Render(context.Background(), tgz, opts); err != nil {
			t.Fatal(err)
		}
	}
	_, e, err := opts.Charts.load(tgz)
	if err != nil || e == nil {
		t.Fatalf("chart not kept: %v", err)
	}
	p := e.crds.Load()
	if p == nil || len(*p) != 2 { // before dependencies are processed: top's and sub's file
		t.Fatalf("crd prints %v", p)
	}
	for k, pr := range *p {
		text := crdText(k.filename, k.file.Data)
		if pr.size != int64(len(text)) || pr.size != crdTextSize(k.filename, k.file.Data) || pr.nodes != yamlfile.StructureCount(text) || pr.key != sha(text) {
			t.Errorf("%s: %+v, want size %d, nodes %d, key of its text", k.filename, pr, len(text), yamlfile.StructureCount(text))
		}
		if _, ok := opts.CRDs.kept.Peek(pr.key); !ok {
			t.Errorf("%s: not in the CRD cache under its key", k.filename)
		}
	}
}

// A crds/ file is counted once (for the release's bound) and decoded with
// that count: the document bound still applies to it, at the limit, in a
// process (no caches) and in the render server (caches, and a second
// render of the kept chart, which takes the count from its crdPrints).
func TestCRDFileDocumentBound(t *testing.T) {
	chartWith := func(nodes int) []byte { // the file's document: nodes structural characters
		head := "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: bigs.example.com\nspec:\n  a: ["
		body := head + "1]\n"
		body = head + strings.Repeat("1,", nodes-yamlfile.StructureCount([]byte(body))) + "1]\n"
		if n := yamlfile.StructureCount([]byte(body)); n != nodes {
			t.Fatalf("file has %d structural characters, want %d", n, nodes)
		}
		tgz, err := ocmbuild.PackageChart(map[string][]byte{
			"Chart.yaml":        []byte("apiVersion: v2\nname: top\nversion: 1.0.0\n"),
			"crds/big.yaml":     []byte(body),
			"templates/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n"),
		})
		if err != nil {
			t.Fatal(err)
		}
		return tgz
	}
	// The printed file's document adds its "# Source:" line (2) and a
	// newline.
	under, over := chartWith(manifests.MaxDocumentNodes-3), chartWith(manifests.MaxDocumentNodes-2)
	for _, mode := range []struct {
		name string
		opts func() Options
	}{
		{"process", func() Options { return Options{} }},
		{"server", func() Options { return Options{CRDs: NewCRDCache(0), Charts: NewChartCache(0)} }},
	} {
		opts := mode.opts()
		for i := 0; i < 2; i++ {
			objs, err := Render(context.Background(), under, opts)
			if err != nil || len(objs) != 2 {
				t.Fatalf("%s, render %d, at the limit: %d objects, %v", mode.name, i+1, len(objs), err)
			}
			_, err = Render(context.Background(), over, opts)
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("document starting at line 2 has %d structural characters", manifests.MaxDocumentNodes+1)) {
				t.Fatalf("%s, render %d, one over the limit: err = %v, want the document bound", mode.name, i+1, err)
			}
		}
	}
}

// A copy of a kept CRD that a render did not change is known as the JSON
// text of the kept object, once; a changed copy, an object the cache did
// not hand out and a nil cache are not.
func TestCRDCacheKnownJSON(t *testing.T) {
	stream := []byte("---\n# Source: c/templates/crd.yaml\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: a.example.com\n" +
		"spec:\n  group: example.com\n  names: {kind: A, plural: as}\n  versions: [{name: v1, served: true, storage: true}]\n" +
		"---\n# Source: c/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n")
	c := NewCRDCache(0)
	decode := func() []manifests.Object {
		objs, err := manifests.DecodeWith("chart c", stream, c.document)
		if err != nil {
			t.Fatal(err)
		}
		return objs
	}
	first := decode()
	want, err := manifests.JSONDocument(first[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range first {
		if _, ok := c.KnownJSON(o); ok {
			t.Fatalf("first render: %s known, though decoded by this render", manifests.Key(o))
		}
	}
	second := decode()
	if text, ok := c.KnownJSON(second[1]); ok {
		t.Fatalf("ConfigMap known: %s", text)
	}
	text, ok := c.KnownJSON(second[0])
	if !ok || !bytes.Equal(text, want) {
		t.Fatalf("unchanged copy: %v %s, want %s", ok, text, want)
	}
	if _, ok := c.KnownJSON(second[0]); ok {
		t.Fatal("a copy is known twice")
	}
	third := decode()
	third[0]["metadata"].(map[string]any)["annotations"] = map[string]any{"argocd.argoproj.io/sync-wave": "-1"}
	if _, ok := c.KnownJSON(third[0]); ok {
		t.Fatal("changed copy known")
	}
	if text, _ := manifests.JSONDocument(third[0]); bytes.Equal(text, want) {
		t.Fatal("the change does not show in the encoding")
	}
	var nilCache *CRDCache
	if _, ok := nilCache.KnownJSON(decode()[0]); ok {
		t.Fatal("nil cache knows an object")
	}
}

// The copies waiting to be encoded hold at most the cache's bound of text:
// past it they are forgotten (encoded again), never kept without bound.
func TestCRDCacheKnownJSONBound(t *testing.T) {
	stream := []byte("---\n# Source: c/templates/crd.yaml\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: a.example.com\nspec: {group: example.com}\n")
	c := NewCRDCache(4 << 10)
	var copies []manifests.Object
	for i := 0; i < 100; i++ {
		objs, err := manifests.DecodeWith("chart c", stream, c.document)
		if err != nil {
			t.Fatal(err)
		}
		copies = append(copies, objs[0])
	}
	if c.handedBytes > c.kept.Max() || len(c.handed) == 0 || len(c.handed) >= 99 {
		t.Fatalf("%d copies, %d bytes of text waiting; bound %d", len(c.handed), c.handedBytes, c.kept.Max())
	}
	if _, ok := c.KnownJSON(copies[len(copies)-1]); !ok {
		t.Fatal("the last copy is not known")
	}
	if _, ok := c.KnownJSON(copies[1]); ok {
		t.Fatal("an early copy is still known past the bound")
	}
}
