package manifests

import (
	"encoding/binary"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	yamlv2 "go.yaml.in/yaml/v2"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/examples"
)

// checkFastDecode fails t unless fastDecode gives what the reference path
// of decodeDoc gives for doc (yaml.v2's Unmarshal, then jsonValue), or
// declines; it reports whether fastDecode decoded doc.
func checkFastDecode(t testing.TB, doc []byte) bool {
	t.Helper()
	got, ok := fastDecode(doc)
	if !ok {
		return false
	}
	var v any
	if err := yamlv2.Unmarshal(doc, &v); err != nil {
		t.Fatalf("fastDecode accepted what yaml.v2 refuses (%v):\n%s", err, doc)
	}
	want, wok := jsonValue(v)
	if !wok {
		t.Fatalf("fastDecode accepted what the direct conversion does not cover:\n%s", doc)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("document:\n%s\nfastDecode: %#v\nyaml.v2:    %#v", doc, got, want)
	}
	return true
}

// fastDecodeCorpus: documents at the edges of the subset, each also
// checked with a prefix (nesting) by the test.
var fastDecodeCorpus = []string{
	"a: 1\n", "a: 1", "a:\n", "a:\nb: 2\n", "a: []\nb: {}\n", "a: [ ]\n", "a: {b: 1}\n", "a: -1\nb: -x\nc: --flag\n", "a: - x\n",
	"a: yes\nb: No\nc: on\nd: ~\ne: null\nf: Null\ng: 1e3\nh: 0x1F\ni: 017\nj: 0o17\nk: 1_000\nl: .5\nm: .inf\nn: 2001-12-14\no: 1:20\np: 9223372036854775808\nq: -0\nr: 0.0\ns: 1.5\n",
	"'a': 1\n\"b\": 2\n'it''s': 'x''y'\n\"q\\\"\": \"\\\\\\n\\t\\x41\\u00e9\\U0001F389\\/\"\n", "a: \"\\e\"\n", "a: \"\\ud800\"\n", "a: \"x\n  y\"\n", "a: 'x\n  y'\n",
	"a: \"x\" # c\n", "a: x # c\n", "a: x#c\n", "a: x #c\n", "a: 'x' y\n", "# c\na: 1\n  # indented comment\nb: 2\n", "a: b: c\n", "a: b:\n", "a:b\n", "a :b\n", "a : b\n",
	"a: x\n  y\n", "a: x\n\n  y\n", "a:\n  - 1\n  - 2\n", "a:\n- 1\n- 2\nb: 3\n", "- 1\n- 2\n", "- a: 1\n  b: 2\n- c: 3\n", "-   a: 1\n    b: 2\n", "- - a\n", "-\n- b\n", "-\n  a: 1\n", "-\n  x\n",
	"a:\n  b:\n    c: 1\n  d: 2\n", "a:\n    b: 1\n  c: 2\n", "a:\n  b: 1\n c: 2\n", "a: 1\na: 2\n", "<<: {}\n", "true: 1\n", "1: a\n", "? a\n: b\n", "&x a: 1\n", "a: &x 1\n", "a: *x\n", "a: !!str 1\n",
	"a: |\n  line1\n  line2\n", "a: |-\n  x\n\n", "a: |+\n  x\n\n\n", "a: |\n  x\n\n  y\n\n", "a: |\n    x\n  y\n", "a: |\n  x\n   y\n      \n", "a: |\n\n  x\n", "a: |2\n   x\n",
	"a: >\n  x\n  y\n", "a: |\nb: 1\n", "a: |\n  # not a comment\n  x\n# a comment\nb: 1\n", "a: |\n  x", "a: |+\n  x\n  ", "- |\n  x\n- y\n", "- a: |\n    x\n  b: 1\n",
	"a: \"\"\nb: ''\n", "a: ' x '\n", "a: \"a #b\"\n", "a:    spaced   value   \n", "a: \u00e9\u65e5\n", "\u00e9: 1\n", "a: \t1\n", "a: 1\r\n", "a: \u2028\n", "a: x\u0085y\n",
	"a: %x\n", "a: @x\n", "a: `x\n", "a: ?x\n", "a: :x\n", "a: ,x\n", "a: x,y[z]{w}\n", "a: x: \n", "-a: 1\n", "  a: 1\n", "a\n", "plain\n", "- x\ny: 1\n", "a:\n  - x\n  y: 1\n",
	"a: \"x\\\n  y\"\n", "a: \"x \n\n   y \"\n", "a: \"x\ny\"\n", "- \"a\n  b\"\n- 'c\n\n\n  d'\n", "a: 'x''\n  ''y'\n", "a: \"x\\  \n  y\"\n", "a: \"x\\", "a: \"x\n",
	"a: x\n  - y\n", "a: x\n  # c\n", "a: x\n  y\n\n\n  z\nb: 1\n", "a: x\n  y: z\n", "a: x\n  y #z\n", "a: x\n  `y`\n", "- x\n  y\n- z\n", "a:\n  {}\nb:\n  [1, \"x\"]\n",
	"a: [a, b-c, 1.5, \"d\"]\n", "a: [ \"x\" , y ]\n", "a: [x,]\n", "a: [-x]\n", "a: [yes, null, 017]\n", "a: [\"x\"] y\n", "a: [x\n", "a: \"x\" y\n  z\"\n",
	"a: {b: 1, c: x/y, d: \"q\", e: {}, f: []}\n", "a: {b: 1,c: 2}\n", "a: { b: 1 }\n", "a: {b:1}\n", "a: {b: 1, b: 2}\n", "a: {yes: 1}\n", "a: {b: {c: 1}}\n", "a: {b: yes, c: null, d: 1e3}\n",
	"- {name: tmp, emptyDir: {}}\n- [a, b]\n", "a:\n  {b: c}\n", "a: {b: c} x\n", "a: {b: c\n", "a: {\"b\": c}\n", "a: {b: c,}\n", "a: {<<: x}\n", "a: {b: -1, c: a_b}\n", "a: {b: 'c'}\n",
	"a: " + strings.Repeat("k", 1100) + "\n", strings.Repeat("k", 1100) + ": 1\n", "a: \"\\N\\_\\L\\P\\0\\a\\b\\v\\f\\r\\ \"\n", "a: 2001-12-14t21:59:43.10-05:00\n", "a: 1e400\n", "a: .nan\n",
	// Single-quoted scalars in flow collections (podinfo's test Pods).
	"a: ['x']\n", "a: ['x', 'y z', \"w\"]\n", "a:  ['-addr=x.y:9999']\n", "a: ['it''s', '']\n", "a: ['a, b]', 'c']\n", "a: ['x' , 'y' ]\n", "a: ['x'y]\n", "a: ['x\n", "a: ['x'] # c\n",
	"a: ['#x', ' #y', 'z: w']\n", "a: ['x': 1]\n", "a: {'b': 'c', d: 'e f'}\n", "a: {'b':c}\n", "a: {b: 'c'd}\n", "a: ['" + strings.Repeat("k", 1100) + "']\n", "a: {'" + strings.Repeat("k", 1100) + "': 1}\n",
	// Documents of comments only (a template that renders nothing but
	// comments), and near misses.
	"# c\n", "# c\n  # d\n\n", "", "\n\n", "# c", "# c\n%x\n", "  # c\nx\n", "#c\n- a\n", "# c\n---\n",
	// Keys short as values but long as text (yaml.v2 counts the text up
	// to the ':').
	"\"" + strings.Repeat(`\x41`, 300) + "\": 1\n", "'" + strings.Repeat(`''`, 600) + "': 1\n", "a: {\"" + strings.Repeat("R", 1100) + "\": c}\n",
}

// fastDecode decodes like yaml.v2 (through jsonValue) for the corpus, the
// corpus nested in a mapping and a sequence, random objects as Encode
// writes them (folded plain, quoted and literal scalars at every depth),
// and every document of the fixtures and the real-world goldens, most of
// whose bytes it must take.
func TestFastDecodeSameAsYAMLv2(t *testing.T) {
	for _, doc := range fastDecodeCorpus {
		checkFastDecode(t, []byte(doc))
		indented := "  " + strings.ReplaceAll(strings.TrimSuffix(doc, "\n"), "\n", "\n  ") + "\n"
		checkFastDecode(t, []byte("root:\n"+indented))
		checkFastDecode(t, []byte("- k: v\n"+indented))
		checkFastDecode(t, []byte("seq:\n- "+strings.TrimPrefix(indented, "  ")))
	}
	// The bench's synthetic CRD (a flow mapping among block ones).
	if !checkFastDecode(t, examples.LargeCRD(4, 3)) {
		t.Error("fastDecode declined examples.LargeCRD")
	}
	r := rand.New(rand.NewPCG(9, 10))
	decoded, total := 0, 0
	for i := 0; i < 5000; i++ {
		o := Object{"apiVersion": "v1", "kind": "ConfigMap", "data": randomValue(r, 0)}
		b, err := marshalYAML(o)
		if err != nil {
			continue
		}
		total++
		if checkFastDecode(t, b) {
			decoded++
		}
	}
	if decoded < total/3 {
		t.Fatalf("fastDecode took %d of %d random documents", decoded, total)
	}

	files, _ := fixtureFiles(t)
	fastBytes, allBytes, docs := 0, 0, 0
	for _, f := range files {
		for _, d := range splitYAML(f.data) {
			docs++
			allBytes += len(d.data)
			if checkFastDecode(t, d.data) {
				fastBytes += len(d.data)
			}
		}
	}
	t.Logf("random: %d of %d; fixtures: %d documents, %d of %d bytes by fastDecode", decoded, total, docs, fastBytes, allBytes)
	if fastBytes < allBytes*3/4 {
		t.Fatalf("fastDecode took only %d of %d bytes of the fixtures", fastBytes, allBytes)
	}
}

// fastDecode takes documents of real charts' outputs that it once left to
// yaml.v2 (TestFastDecodeSameAsYAMLv2 checks that it decodes them the same).
func TestFastDecodeTakes(t *testing.T) {
	for _, doc := range []string{
		// podinfo's grpc test Pod.
		"# Source: podinfo/templates/tests/grpc.yaml\napiVersion: v1\nkind: Pod\nmetadata:\n  name: podinfo-grpc-test-yb9bt\n" +
			"  annotations:\n    \"helm.sh/hook\": test-success\nspec:\n  containers:\n    - name: grpc-health-probe\n" +
			"      image: stefanprodan/grpc_health_probe:v0.3.0\n      command: ['grpc_health_probe']\n      args:  ['-addr=podinfo.apps:9999']\n  restartPolicy: Never\n",
		// ingress-nginx's PodDisruptionBudget template, disabled.
		"# Source: ingress-nginx/templates/controller-poddisruptionbudget.yaml\n# PDB is not supported for DaemonSets.\n# https://github.com/kubernetes/kubernetes/issues/108124\n",
	} {
		if !checkFastDecode(t, []byte(doc)) {
			t.Errorf("fastDecode declined:\n%s", doc)
		}
	}
}

// FuzzFastDecode: whatever fastDecode accepts, yaml.v2 reads to the same
// values.
func FuzzFastDecode(f *testing.F) {
	for _, doc := range fastDecodeCorpus {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if len(doc) > 1<<16 {
			return
		}
		checkFastDecode(t, doc)
	})
}

// Documents of the fixtures with random line-level damage (lines dropped,
// doubled, indented or outdented, characters YAML gives meaning to
// inserted): fastDecode still agrees with yaml.v2 or declines.
func TestFastDecodeMutatedFixtures(t *testing.T) {
	var docs [][]byte
	files, _ := fixtureFiles(t)
	for _, f := range files {
		for _, d := range splitYAML(f.data) {
			if len(d.data) < 20_000 {
				docs = append(docs, d.data)
			}
		}
	}
	if len(docs) == 0 {
		t.Fatal("no fixture documents")
	}
	r := rand.New(rand.NewPCG(11, 12))
	inserts := []string{" ", "  ", "- ", "#", " #", ": ", ":", "'", "\"", "\\", "|", "|-", ">", "[", "]", "{}", "&a ", "*a", "!x ", "? ", "\n", "\n\n", "yes", "1e3", "~"}
	accepted := 0
	for n := 0; n < 3000; n++ {
		lines := strings.SplitAfter(string(docs[r.IntN(len(docs))]), "\n")
		for k := 1 + r.IntN(3); k > 0; k-- {
			i := r.IntN(len(lines))
			switch r.IntN(5) {
			case 0:
				lines = append(lines[:i], lines[i+1:]...)
			case 1:
				lines = append(lines[:i+1], lines[i:]...)
			case 2:
				lines[i] = " " + lines[i]
			case 3:
				lines[i] = strings.TrimPrefix(lines[i], " ")
			default:
				at := r.IntN(len(lines[i]) + 1)
				lines[i] = lines[i][:at] + inserts[r.IntN(len(inserts))] + lines[i][at:]
			}
			if len(lines) == 0 {
				lines = []string{"a: 1\n"}
			}
		}
		if checkFastDecode(t, []byte(strings.Join(lines, ""))) {
			accepted++
		}
	}
	t.Logf("%d of 3000 damaged documents decoded by fastDecode", accepted)
}

// plainASCIIWord is exact: every byte value at every position of a word,
// over backgrounds of printable ASCII, LF and bytes next to the limits
// (so that a carry between bytes would show), and random words.
func TestPlainASCIIWordSameAsBytes(t *testing.T) {
	byBytes := func(x uint64) bool {
		for k := 0; k < 8; k++ {
			if c := byte(x >> (8 * k)); c != '\n' && (c < 0x20 || c > 0x7e) {
				return false
			}
		}
		return true
	}
	check := func(x uint64) {
		if got, want := plainASCIIWord(x), byBytes(x); got != want {
			t.Fatalf("%#016x: plainASCIIWord %v, bytes %v", x, got, want)
		}
	}
	for _, bg := range []byte{' ', 'a', '~', '\n', 0x1f, 0x7f, 0x80, 0xff, 0x00, 0x0b, 0x09} {
		for k := 0; k < 8; k++ {
			for c := 0; c < 256; c++ {
				for k2 := 0; k2 < 8; k2++ {
					for _, c2 := range []byte{'\n', 0x7f, 0x20, 0x1f} {
						var b [8]byte
						for i := range b {
							b[i] = bg
						}
						b[k2] = c2
						b[k] = byte(c)
						check(binary.LittleEndian.Uint64(b[:]))
					}
				}
			}
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 200000 {
		check(r.Uint64())
	}
}

// fastDecodable's word skip agrees with the byte loop for a character it
// refuses or takes at every offset.
func TestFastDecodableAtEveryOffset(t *testing.T) {
	slow := func(data []byte) bool {
		for _, r := range string(data) {
			if r < 0x80 {
				if r < 0x20 && r != '\n' || r == 0x7f {
					return false
				}
				continue
			}
			if r == utf8.RuneError || r == 0x85 || r == 0x2028 || r == 0x2029 || r == 0xfeff ||
				!(r >= 0xa0 && r <= 0xd7ff || r >= 0xe000 && r <= 0xfffd || r >= 0x10000 && r <= 0x10ffff) {
				return false
			}
		}
		return true
	}
	bg := "key: value\n  - item: {a: b}\nx"
	for _, c := range []string{"\t", "\r", "\x00", "\x7f", "\x1f", "\n", "~", " ", "é", "\u0085", "\u2028", "\ufeff", "\xff", "\xc3", "🎉", "\ufffe"} {
		for at := 0; at <= len(bg); at++ {
			v := []byte(bg[:at] + c + bg[at:])
			if got, want := fastDecodable(v), slow(v); got != want {
				t.Fatalf("%q: fastDecodable %v, byte loop %v", v, got, want)
			}
		}
	}
}
