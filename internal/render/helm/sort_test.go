package helm

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/yamlfile"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
)

// wellFormedDocs are documents as charts render them: sortedRelease sorts
// them by their decoded objects alone.
var wellFormedDocs = []string{
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: b\n",
	"# a comment\napiVersion: v1\nkind: Service\nmetadata:\n  name: svc\n  labels: {a: b}\n",
	"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n  annotations:\n    checksum/config: abc\nspec:\n  replicas: 1\n",
	"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ns\n",
	"apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n",
	"apiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: g\n",
	"apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: sa\n  annotations:\n",
	"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  annotations: {}\n",
	"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n    helm.sh/hook: pre-install\n    helm.sh/hook-weight: \"-3\"\n",
	"apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n  annotations:\n    helm.sh/hook: post-install, Pre-Upgrade\n    helm.sh/hook-weight: \"5\"\n    helm.sh/hook-delete-policy: before-hook-creation,Hook-Succeeded\n",
	"apiVersion: v1\nkind: Pod\nmetadata:\n  name: t\n  annotations:\n    helm.sh/hook: test\n    helm.sh/hook-output-log-policy: hook-failed\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: h\n  annotations:\n    \"helm.sh/hook\": test-success\n    helm.sh/hook-weight: x\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: u\n  annotations:\n    helm.sh/hook: no-such-event\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  annotations:\n    a: b\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\ndata: {}\n",
	"apiVersion: v1\nkind: ConfigMap\n",
	"# only a comment\n",
	"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: cr\nrules:\n- apiGroups: [\"\"]\n  resources: [pods]\n",
	"apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: a.example.com\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: re\ndata:\n  rule: 'a\\d+\\.b'\n",
	"apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: lists.example.com\nspec:\n  names:\n    listKind: WidgetList\n  versions:\n  - name: v1\n    schema: {description: \"a List of \\\"things\\\"\"}\nstatus:\n  kinds: List\n",
	"kind: Role\napiVersion: rbac.authorization.k8s.io/v1\nmetadata:\n  name: r\nrules:\n- verbs: [List, watch]\n# kind: List\n",
}

// unusualDocs are documents whose decoded objects do not tell exactly
// what Helm reads of them (or that Helm or the plugin refuse): Helm's
// parse reads them, or Helm's path renders the whole release.
var unusualDocs = []string{
	"apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: l1\n  annotations:\n    helm.sh/hook: pre-install\n",
	"apiVersion: v1\nkind: List\nmetadata:\n  annotations:\n    helm.sh/hook: pre-install\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: l2\n",
	"apiVersion: v1\nkind: List\nitems: []\n",
	"apiVersion: other/v1\nkind: List\nmetadata:\n  name: ol\n",
	"apiVersion: v1\nkind:\n  List\nitems:\n- apiVersion: v1\n  kind: Secret\n  metadata:\n    name: next-line\n",
	"apiVersion: v1\nkind: |-\n  List\nitems:\n- apiVersion: v1\n  kind: Secret\n  metadata:\n    name: block\n",
	"apiVersion: v1\nx: &k List\nkind: *k\nitems:\n- apiVersion: v1\n  kind: Secret\n  metadata:\n    name: alias\n",
	"apiVersion: v1\n<<: {kind: List}\nitems:\n- apiVersion: v1\n  kind: Secret\n  metadata:\n    name: merge\n",
	"apiVersion: v1\n'kind': List\nitems:\n- apiVersion: v1\n  kind: Secret\n  metadata:\n    name: quoted-key\n",
	"apiVersion: v1\nkind: \"Li\\\n  st\"\nitems:\n- apiVersion: v1\n  kind: Secret\n  metadata:\n    name: joined\n",
	"apiVersion: v1\nkind : List\nitems:\n- apiVersion: v1\n  kind: Secret\n  metadata:\n    name: space\n",
	"apiVersion: v1\nkind: \"Li\\x73t\"\nitems:\n- apiVersion: v1\n  kind: Secret\n  metadata:\n    name: esc\n",
	"apiVersion: v1\nkind: !!binary TGlzdA==\nitems:\n- apiVersion: v1\n  kind: Secret\n  metadata:\n    name: bin\n",
	"- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: seq\n",
	"[]\n",
	"null\n",
	"{\"apiVersion\": \"v1\", \"kind\": \"Service\", \"metadata\": {\"name\": \"json\", \"annotations\": {\"helm.sh/hook\": \"pre-delete\"}}, \"spec\": {\"x\": 1.0}}\n",
	"{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"jsonnum\"}, \"data\": {\"x\": 1.0}}\n",
	"  apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: indented\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: end\n...\n# after the end\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: directive\n...\n%YAML 1.1\n",
	"...\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: after-end\n",
	"apiVersion: v1\nkind: ConfigMap\nKind: Secret\nmetadata:\n  name: folded\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: folded2\n  Annotations:\n    helm.sh/hook: pre-install\n",
	"apiVersion: v1\nkind: ConfigMap\nMETADATA:\n  annotations:\n    helm.sh/hook: post-install\n",
	"\"kind\": Deployment\napiVersion: apps/v1\nmetadata:\n  name: quoted\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: 5\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: w\n  annotations:\n    helm.sh/hook: pre-install\n    helm.sh/hook-weight: 7\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: nullhook\n  annotations:\n    helm.sh/hook:\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  annotations:\n    helm.sh/hook: pre-install\n    x: true\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata: just-a-string\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  annotations: [a]\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dots\n...\napiVersion: v1\nkind: Secret\nmetadata:\n  name: after-dots\n",
	"base: &b\n  apiVersion: v1\n  kind: Secret\n<<: *b\nmetadata:\n  name: merged\n",
	"apiVersion: v1\nkind: [\n",
	"just a string\n",
	"kind: ConfigMap\nmetadata:\n  name: no-api-version\n",
}

// The plugin's sort of a release's documents (sortedRelease) is Helm's
// SortManifests on random releases, document for document (name, content,
// head; every field of every hook), and its objects are those of the
// release manifest and hooks Helm's sort gives; when it gives up, Helm's
// path renders (its outcome is Helm's by definition). Well-formed releases
// never make it give up.
func TestSortedReleaseIsSortManifests(t *testing.T) {
	defer log.SetOutput(log.Writer())
	log.SetOutput(io.Discard) // Helm's "skipping unknown hook"
	rng := rand.New(rand.NewPCG(3, 4))
	paths := []string{"c/templates/a.yaml", "c/templates/b.yaml", "c/templates/_helpers.tpl", "c/charts/sub/templates/z.yaml", "c/templates/NOTES.txt"}
	seps := []string{"---\n", "\n---\n", "\n---  \n\n", "---\n# Source: x\n", "\n--- # c\n", "\n---\n---\n", "\n---\n---\n---\n", "\n---\n# c\n---\n"}
	fast, gaveUp := 0, 0
	for round := range 4000 {
		pool := wellFormedDocs
		if round%2 == 1 {
			pool = append(append([]string(nil), wellFormedDocs...), unusualDocs...)
		}
		files := map[string]string{}
		for _, p := range paths[:1+rng.IntN(len(paths))] {
			var b strings.Builder
			for range rng.IntN(6) {
				b.WriteString(seps[rng.IntN(len(seps))])
				b.WriteString(pool[rng.IntN(len(pool))])
			}
			files[p] = b.String()
		}
		if !checkSortedRelease(t, files) {
			if round%2 == 0 {
				t.Fatalf("gave up on well-formed documents:\n%#v", files)
			}
			gaveUp++
			continue
		}
		fast++
	}
	if fast < 2000 || gaveUp == 0 {
		t.Fatalf("%d releases sorted, %d given up: the cases do not test both paths", fast, gaveUp)
	}
	t.Logf("%d releases sorted by the plugin, %d by Helm", fast, gaveUp)
}

// checkSortedRelease fails t unless sortedRelease gives up on files (with
// and without a CRDCache's hook) or sorts them as SortManifests does (see
// TestSortedReleaseIsSortManifests); it reports whether it sorted them.
func checkSortedRelease(t testing.TB, files map[string]string) bool {
	t.Helper()
	hooks, generic, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	var sorted *sortedDocs
	var ok bool
	for _, hook := range []manifests.DocumentHook{nil, NewCRDCache(0).document} {
		sorted, ok = sortedRelease("chart c", files, 0, hook)
		if !ok {
			break
		}
	}
	if !ok {
		return false
	}
	if err != nil {
		t.Fatalf("sorted what Helm refuses (%v):\n%#v", err, files)
	}
	if len(sorted.generic) != len(generic) || len(sorted.hooks) != len(hooks) {
		t.Fatalf("%d manifests and %d hooks, Helm's %d and %d:\n%#v", len(sorted.generic), len(sorted.hooks), len(generic), len(hooks), files)
	}
	var manifest strings.Builder
	var got, want []manifests.Object
	for i, m := range generic {
		d := sorted.generic[i]
		if d.path != m.Name || d.content != m.Content || !reflect.DeepEqual(&d.head, m.Head) {
			t.Fatalf("manifest %d is %s %q %+v, Helm's %s %q %+v", i, d.path, d.content, d.head, m.Name, m.Content, m.Head)
		}
		fmt.Fprintf(&manifest, "---\n# Source: %s\n%s\n", m.Name, m.Content)
		got = append(got, d.objs...)
	}
	for i, h := range hooks {
		if !reflect.DeepEqual(sorted.hooks[i].hook, h) {
			t.Fatalf("hook %d is %+v, Helm's %+v", i, sorted.hooks[i].hook, h)
		}
	}
	want, err = manifests.Decode("chart c", []byte(manifest.String()))
	if err != nil {
		t.Fatalf("Helm's release manifest does not decode (%v) but the documents did:\n%#v", err, files)
	}
	for i, h := range hooks {
		objs, err := manifests.Decode(h.Path, []byte(h.Manifest))
		if err != nil {
			t.Fatalf("Helm's hook %s does not decode (%v) but the document did", h.Path, err)
		}
		got = append(got, sorted.hooks[i].objs...)
		want = append(want, objs...)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("objects differ from Helm's release:\n%v\nHelm's:\n%v", got, want)
	}
	return true
}

// Documents whose objects do not tell Helm's head exactly are read with
// Helm's parse; every head is Helm's.
func TestHeadOf(t *testing.T) {
	for _, doc := range append(append([]string(nil), wellFormedDocs...), unusualDocs...) {
		files := map[string]string{"c/templates/a.yaml": doc}
		_, generic, herr := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
		d := splitRelease(files)
		if len(d) != 1 {
			t.Fatalf("%q: %d documents", doc, len(d))
		}
		text := fmt.Appendf(nil, "---\n# Source: x\n%s\n", d[0].content)
		ok := decodeDoc("chart c", d[0], text, yamlfile.StructureCount(text), nil)
		if ok && herr != nil {
			t.Errorf("%q: read, Helm refuses it: %v", doc, herr)
		}
		if ok && len(generic) == 1 && !reflect.DeepEqual(&d[0].head, generic[0].Head) {
			t.Errorf("%q: head %+v, Helm's %+v", doc, d[0].head, generic[0].Head)
		}
		if _, quick := headOf(d[0].content, d[0].objs); !quick && slices.Contains(wellFormedDocs, doc) && doc != "# only a comment\n" {
			t.Errorf("%q: head not taken from the objects", doc)
		}
	}
}

// sourceText is the text fmt.Appendf gives with Helm's format, for strings
// and bytes of any content.
func TestSourceText(t *testing.T) {
	for _, file := range []string{"", "c/templates/a.yaml", "%s %d\n", "\xff\xfe"} {
		for _, doc := range []string{"", "a: 1", "a: 1\n", "%!s(MISSING) %v", "\x00\xff", strings.Repeat("x: y\n", 1000)} {
			want := fmt.Appendf(nil, "---\n# Source: %s\n%s\n", file, doc)
			if got := sourceText(file, doc); !bytes.Equal(got, want) || cap(got) != len(got) {
				t.Errorf("sourceText(%q, %q) = %q (cap %d), want %q", file, doc, got, cap(got), want)
			}
			if got := sourceText(file, []byte(doc)); !bytes.Equal(got, want) {
				t.Errorf("sourceText(%q, []byte(%q)) = %q, want %q", file, doc, got, want)
			}
		}
	}
}
