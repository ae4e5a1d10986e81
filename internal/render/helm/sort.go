package helm

import (
	"errors"
	"log"
	"path"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode"

	release "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/yamlfile"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/parallel"
)

// Helm's releaseutil.SortManifests YAML-parses every rendered document to
// read its kind and annotations (and splits files with a regular expression
// that backtracks over every newline), and the plugin then decodes the same
// documents again for its objects: for kube-prometheus-stack the sort was a
// third of the render's CPU. sortedRelease decodes each document once and
// sorts by what it decoded, with Helm's rules (manifestFile.sort,
// sortManifestsByKind, sortHooksByKind of Helm v4.3.2).
//
// Where the decoded objects do not tell exactly what Helm's own parse of a
// document (sigs.k8s.io/yaml into releaseutil.SimpleHead) would read, that
// document is parsed as Helm parses it (see headOf). Where anything fails or
// is unusual (an error, a limit, a document that does not decode as it
// would in the release manifest), sortedRelease gives up and RenderChart
// takes Helm's own path, whose outcome and error messages are those of
// every render before this one.

// manifestDoc is one document of a rendered template file, as
// releaseutil.SplitManifests splits it, and its objects.
type manifestDoc struct {
	path    string // the template file
	content string // the document, as SplitManifests gives it
	head    releaseutil.SimpleHead
	objs    []manifests.Object
	json    bool // content starts as JSON (see decodeDoc)
}

// sortedDocs are a release's documents sorted as SortManifests sorts them.
type sortedDocs struct {
	generic []*manifestDoc // the release manifest, in order
	hooks   []*sortedHook  // in order
}

type sortedHook struct {
	hook *release.Hook // as SortManifests gives it
	objs []manifests.Object
}

// splitDocs is releaseutil.SplitManifests(file) in order, without its
// regular expression (?m)^---[ \t]* (see splitCount, which counts the same
// documents): the texts between matches, their leading white space trimmed
// (Helm 4 keeps the trailing one), the blank ones left out.
// TestSplitDocs compares both.
func splitDocs(file string) []string {
	var out []string
	eachSplit(file, func(doc string) { out = append(out, strings.TrimLeftFunc(doc, unicode.IsSpace)) })
	return out
}

// eachSplit calls fn with every text between the matches of
// SplitManifests' expression in file without its leading white space
// (unicode.IsSpace), but those that are only white space. A match is a
// "---" at the start of a line and the blanks and tabs after it: it holds
// no newline, so whether a "---" starts a line never depends on an
// earlier match.
func eachSplit(file string, fn func(doc string)) {
	s := strings.TrimLeftFunc(file, unicode.IsSpace)
	emit := func(doc string) {
		if strings.TrimSpace(doc) != "" {
			fn(doc)
		}
	}
	beg := 0 // the end of the last match
	for pos := 0; ; {
		i := strings.Index(s[pos:], "---")
		if i < 0 {
			break
		}
		r := pos + i
		if r > 0 && s[r-1] != '\n' {
			pos = r + 1
			continue
		}
		end := r + 3
		for end < len(s) && (s[end] == ' ' || s[end] == '\t') {
			end++
		}
		emit(s[beg:r])
		beg, pos = end, end
	}
	emit(s[beg:])
}

// splitRelease splits the rendered files as SortManifests does: in the
// order of their paths, partials and empty files left out.
func splitRelease(files map[string]string) []*manifestDoc {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var docs []*manifestDoc
	for _, p := range paths {
		content := files[p]
		if strings.HasPrefix(path.Base(p), "_") || strings.TrimSpace(content) == "" {
			continue
		}
		for _, d := range splitDocs(content) {
			docs = append(docs, &manifestDoc{path: p, content: d})
		}
	}
	return docs
}

// sortedRelease splits, decodes and sorts the rendered files of chart name
// (crdNodes: the structural characters of the CRDs printed before them), or
// reports false (nothing decoded is returned) for Helm's own path.
//
// Each document is decoded alone from the text the release manifest holds
// for it, "---\n# Source: <path>\n<document>\n", through hook (the
// CRDCache's, may be nil), and must be exactly one YAML document of that
// text: then its objects are those a decode of the whole release manifest
// gives for it, and those of a decode of the document alone, as hooks are
// decoded. The bounds are those of that whole decode: MaxStreamNodes for
// the manifest and the CRDs (hooks included: they are a subset of what
// countDocuments bounded).
func sortedRelease(name string, files map[string]string, crdNodes int, hook manifests.DocumentHook) (*sortedDocs, bool) {
	docs := splitRelease(files)
	texts := make([][]byte, len(docs))
	counts := make([]int, len(docs)) // each text's, which its decode is held to
	nodes, size := crdNodes, 0
	for i, d := range docs {
		texts[i] = sourceText(d.path, d.content)
		counts[i] = yamlfile.StructureCount(texts[i])
		nodes += counts[i]
		size += len(texts[i])
	}
	if nodes > manifests.MaxStreamNodes || len(docs) > manifests.MaxObjects {
		return nil, false
	}
	workers := min(runtime.GOMAXPROCS(0), len(docs))
	if len(docs) < 4 || size < 32<<10 {
		workers = 1 // starting goroutines would cost more than they save
	}
	if parallel.EachInOrder(len(docs), workers, func(i int) error {
		if !decodeDoc(name, docs[i], texts[i], counts[i], hook) {
			return errNotFast
		}
		return nil
	}) >= 0 {
		return nil, false
	}
	return sortDocs(docs)
}

// errNotFast stops the parallel decoding when a document must take Helm's
// own parse.
var errNotFast = errors.New("document left to Helm's sort")

// hasEndMarker reports whether s has a "..." line (a YAML document end
// marker, as manifests.Decode splits at it).
func hasEndMarker(s string) bool {
	for i := strings.Index(s, "..."); i >= 0; {
		if (i == 0 || s[i-1] == '\n') && strings.TrimRight(lineAt(s, i), " \t\r") == "..." {
			return true
		}
		j := strings.Index(s[i+3:], "...")
		if j < 0 {
			return false
		}
		i += 3 + j
	}
	return false
}

// lineAt is the line of s that starts at i, without its newline.
func lineAt(s string, i int) string {
	if j := strings.IndexByte(s[i:], '\n'); j >= 0 {
		return s[i : i+j]
	}
	return s[i:]
}

// decodeDoc decodes d from text (see sortedRelease; nodes are its
// structural characters) and reads its head.
//
// Decoding documents apart gives the objects a decode of the whole release
// manifest gives: YAML documents are split at lines (manifests.Decode
// splits at "---" and "..." lines), and none of a document's lines but its
// first starts with "---" (SortManifests' expression splits there). A
// document with a "..." line is left to Helm's path: split there, its last
// part may hold nothing but comments, which the whole manifest decodes
// (the next "---" ends it) and a decode of the document alone leaves out.
// Hooks are decoded alone (Decode(h.Path, h.Manifest)), which gives the
// same objects but for a document that starts as JSON does (Decode reads it
// as JSON, not YAML): such a document is marked, and sortDocs gives up if
// it is a hook.
func decodeDoc(name string, d *manifestDoc, text []byte, nodes int, hook manifests.DocumentHook) bool {
	var calls atomic.Int32
	objs, err := manifests.DecodeCountedWith(name, text, nodes, func(doc []byte, decode func() ([]manifests.Object, error)) ([]manifests.Object, error) {
		calls.Add(1)
		if hook != nil {
			return hook(doc, decode)
		}
		return decode()
	})
	if err != nil || calls.Load() == 0 || hasEndMarker(d.content) {
		return false
	}
	d.objs = objs
	if t := strings.TrimSpace(d.content); t != "" && (t[0] == '{' || t[0] == '[') {
		d.json = true
	}
	if h, ok := headOf(d.content, objs); ok {
		d.head = h
		return true
	}
	// As manifestFile.sort parses it.
	return yaml.Unmarshal([]byte(d.content), &d.head) == nil
}

// headOf is the releaseutil.SimpleHead Helm's sort reads from the document
// content (sigs.k8s.io/yaml.Unmarshal: YAML to JSON, then encoding/json),
// taken from objs, its decoded objects, when they tell it exactly; false
// when they may not:
//
//   - objs must be the document's top-level mapping: one object, from a
//     document whose first line of content (after a "---" line, see
//     withoutStartMarker) starts with an ASCII letter in the first column
//     (a block mapping or a scalar, which does not decode; not a sequence,
//     whose items would be the objects, nor flow style or JSON), and whose
//     kind is not List (a List's items are its objects; see mayBeList).
//   - encoding/json matches keys case-insensitively ("Kind" sets Kind):
//     keys of the mapping and of metadata that equal a field's name but for
//     case are left to Helm's parse.
//   - sigs.k8s.io/yaml turns a number or boolean into the string a string
//     field wants, and encoding/json refuses a mapping for a string: only
//     strings (and null) are taken for apiVersion, kind, name and the
//     annotations, only mappings (and null) for metadata and annotations.
func headOf(content string, objs []manifests.Object) (releaseutil.SimpleHead, bool) {
	var h releaseutil.SimpleHead
	if body := withoutStartMarker(content); len(objs) != 1 || !startsWithLetter(body) || mayBeList(body) {
		return h, false
	}
	o := objs[0]
	if foldedKey(o, "apiVersion", "kind", "metadata") {
		return h, false
	}
	var ok bool
	if h.Version, ok = o["apiVersion"].(string); !ok {
		return h, false
	}
	if h.Kind, ok = o["kind"].(string); !ok {
		return h, false
	}
	switch md := o["metadata"].(type) {
	case nil:
	case map[string]any:
		if foldedKey(md, "name", "annotations") {
			return h, false
		}
		h.Metadata = &struct {
			Name        string            `json:"name"`
			Annotations map[string]string `json:"annotations"`
		}{}
		switch n := md["name"].(type) {
		case nil:
		case string:
			h.Metadata.Name = n
		default:
			return h, false
		}
		switch a := md["annotations"].(type) {
		case nil:
		case map[string]any:
			h.Metadata.Annotations = make(map[string]string, len(a))
			for k, v := range a {
				s, ok := v.(string)
				if !ok {
					return h, false
				}
				h.Metadata.Annotations[k] = s
			}
		default:
			return h, false
		}
	default:
		return h, false
	}
	return h, true
}

// withoutStartMarker is s without its first line if that line is "---" (a
// YAML document start marker: SortManifests leaves one in a document that
// follows "---\n---\n"; Helm's parse then reads the document after it, the
// plugin's decode a document of comments, or nothing, and that document).
func withoutStartMarker(s string) string {
	line := lineAt(s, 0)
	if strings.TrimRight(line, " \t\r") != "---" {
		return s
	}
	return s[min(len(line)+1, len(s)):]
}

// startsWithLetter reports whether the first line of s that is neither
// blank nor a comment starts with an ASCII letter.
func startsWithLetter(s string) bool {
	for s != "" {
		line := s
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			line, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		if t := strings.TrimSpace(line); t == "" || t[0] == '#' {
			continue
		}
		c := line[0]
		return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
	}
	return false
}

// mayBeList reports whether the top-level mapping of s, a document whose
// first line of content starts with a letter in the first column (a block
// mapping whose keys are all in the first column), may have the kind List
// (by whatever spelling: a List's objects are its items), reading only its
// lines that start in the first column:
//
//   - every such line must start with a letter (a plain key), '-' (an entry
//     of a sequence that is a key's value) or '#': a quoted, complex ("?"),
//     tagged, anchored or aliased key, or a merge key ("<<"), might be kind
//     or bring one;
//   - the value of a key kind must be on its line and not contain "List",
//     nor start as a block scalar ("|-" could hold "List"), alias, anchor,
//     tag (!!binary), or comment (the value on the lines after); if it is
//     double-quoted, s must have no escape that gives letters or joins
//     lines (\x, \u, \U, an escaped line break).
//
// A plain or single-quoted scalar of several lines folds them with spaces
// and has no escapes: on its first line it must hold "List" to be "List".
// Lines inside multi-line scalars that start in the first column only make
// the answer true more often.
func mayBeList(s string) bool {
	all := s
	for s != "" {
		line := s
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			line, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		if line == "" {
			continue
		}
		switch c := line[0]; {
		case c == ' ' || c == '\t' || c == '\r' || c == '#' || c == '-':
			continue
		case !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'):
			return true
		}
		rest, ok := strings.CutPrefix(line, "kind")
		if !ok {
			continue
		}
		if rest = strings.TrimLeft(rest, " \t"); rest == "" || rest[0] != ':' {
			continue // another key ("kinds: ", "kind x: ")
		}
		v := strings.TrimSpace(rest[1:])
		if v == "" || strings.IndexByte("|>*&!#", v[0]) >= 0 || strings.Contains(v, "List") ||
			v[0] == '"' && hasLetterEscape(all) {
			return true
		}
	}
	return false
}

// hasLetterEscape reports whether s holds a backslash that a double-quoted
// YAML scalar could read as an escape giving letters (\x, \u, \U) or as an
// escaped line break (joining the text around it; YAML 1.1 breaks include
// NEL, LS and PS, which start with bytes past ASCII).
func hasLetterEscape(s string) bool {
	for i := strings.IndexByte(s, '\\'); i >= 0 && i+1 < len(s); {
		switch c := s[i+1]; {
		case c == 'x' || c == 'u' || c == 'U' || c == '\n' || c == '\r' || c >= 0x80:
			return true
		}
		j := strings.IndexByte(s[i+2:], '\\')
		if j < 0 {
			return false
		}
		i += 2 + j
	}
	return false
}

// foldedKey reports whether m has a key that is one of names but for case
// (as encoding/json matches them), and not that name itself.
func foldedKey(m map[string]any, names ...string) bool {
	for k := range m {
		for _, n := range names {
			if k != n && strings.EqualFold(k, n) {
				return true
			}
		}
	}
	return false
}

// hookEvents are releaseutil's events (manifest_sorter.go).
var hookEvents = map[string]release.HookEvent{
	release.HookPreInstall.String():   release.HookPreInstall,
	release.HookPostInstall.String():  release.HookPostInstall,
	release.HookPreDelete.String():    release.HookPreDelete,
	release.HookPostDelete.String():   release.HookPostDelete,
	release.HookPreUpgrade.String():   release.HookPreUpgrade,
	release.HookPostUpgrade.String():  release.HookPostUpgrade,
	release.HookPreRollback.String():  release.HookPreRollback,
	release.HookPostRollback.String(): release.HookPostRollback,
	release.HookTest.String():         release.HookTest,
	"test-success":                    release.HookTest,
}

// sortDocs sorts docs into hooks and the release manifest as
// manifestFile.sort and SortManifests do, with InstallOrder.
// It gives up (false) on a hook that starts as JSON (see decodeDoc).
func sortDocs(docs []*manifestDoc) (*sortedDocs, bool) {
	out := &sortedDocs{}
	for _, d := range docs {
		md := d.head.Metadata
		if md == nil || len(md.Annotations) == 0 {
			out.generic = append(out.generic, d)
			continue
		}
		hookTypes, ok := md.Annotations[release.HookAnnotation]
		if !ok {
			out.generic = append(out.generic, d)
			continue
		}
		weight, err := strconv.Atoi(md.Annotations[release.HookWeightAnnotation])
		if err != nil {
			weight = 0
		}
		h := &release.Hook{
			Name:              md.Name,
			Kind:              d.head.Kind,
			Path:              d.path,
			Manifest:          d.content,
			Events:            []release.HookEvent{},
			Weight:            weight,
			DeletePolicies:    []release.HookDeletePolicy{},
			OutputLogPolicies: []release.HookOutputLogPolicy{},
		}
		unknown := false
		for _, t := range strings.Split(hookTypes, ",") {
			e, ok := hookEvents[strings.ToLower(strings.TrimSpace(t))]
			if !ok {
				unknown = true
				break
			}
			h.Events = append(h.Events, e)
		}
		if unknown {
			log.Printf("info: skipping unknown hook: %s", errdef.Quote(hookTypes)) // as Helm logs it
			continue
		}
		if dps, ok := md.Annotations[release.HookDeleteAnnotation]; ok {
			for _, p := range strings.Split(dps, ",") {
				h.DeletePolicies = append(h.DeletePolicies, release.HookDeletePolicy(strings.ToLower(strings.TrimSpace(p))))
			}
		}
		if lps, ok := md.Annotations[release.HookOutputLogAnnotation]; ok {
			for _, p := range strings.Split(lps, ",") {
				h.OutputLogPolicies = append(h.OutputLogPolicies, release.HookOutputLogPolicy(strings.ToLower(strings.TrimSpace(p))))
			}
		}
		if d.json {
			return nil, false
		}
		out.hooks = append(out.hooks, &sortedHook{hook: h, objs: d.objs})
	}
	sort.SliceStable(out.generic, func(i, j int) bool {
		return lessByKind(out.generic[i].head.Kind, out.generic[j].head.Kind)
	})
	sort.SliceStable(out.hooks, func(i, j int) bool {
		return lessByKind(out.hooks[i].hook.Kind, out.hooks[j].hook.Kind)
	})
	return out, true
}

// installOrder is releaseutil.InstallOrder by kind.
var installOrder = func() map[string]int {
	m := make(map[string]int, len(releaseutil.InstallOrder))
	for i, k := range releaseutil.InstallOrder {
		m[k] = i
	}
	return m
}()

// lessByKind is releaseutil's lessByKind with InstallOrder: known kinds in
// its order, then unknown kinds alphabetically (equal kinds keep their
// order: the sorts are stable).
func lessByKind(a, b string) bool {
	first, aok := installOrder[a]
	second, bok := installOrder[b]
	switch {
	case !aok && !bok:
		return a < b
	case !aok:
		return false
	case !bok:
		return true
	}
	return first < second
}
