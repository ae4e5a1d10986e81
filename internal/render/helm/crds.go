package helm

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"maps"
	"reflect"
	"sync"
	"sync/atomic"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/yamlfile"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/lru"
)

// Helm never parses a chart's crds/ files: `helm template --include-crds`
// prints them as they are, before the rendered manifests. They are most of
// the bytes of operator charts (kube-prometheus-stack: 4 of its 5 MB), so
// decoding them dominated the plugin's render of such charts. They are not
// templates: the same chart version always has the same CRD files, which a
// CRDCache decodes once.

// DefaultCRDCacheSize is the CRD text a CRDCache keeps decoded by default,
// counting each entry's YAML and the JSON text kept beside it: 16 MiB of
// crds/ files, the CRDs of a few operator charts (kube-prometheus-stack's
// are 4 MB), about 64 MiB of objects and 16 MiB of JSON, within a render
// worker's memory. At 16 MiB for both, a chart with 10 MB of CRD files
// (bench's crds-10mb) no longer fitted once the JSON counted and missed on
// every render: 87 → 169 ms of render-server CPU per generation.
const DefaultCRDCacheSize = 32 << 20

// CRDCache keeps the objects decoded from charts' crds/ files, by the
// SHA-256 of each file's text, for as long as it lives (the render server's
// lifetime), within a bound on the text it holds (decoded objects take
// about 4 times their YAML text; each entry counts at least minEntryCost);
// the least recently used files go first.
// Every render gets its own deep copy of the objects. Only CRDs are kept:
// crds/ files, static content of a chart never rendered from values, and
// rendered documents that hold nothing but CustomResourceDefinitions (see
// document), so what one Application's render leaves in the cache is a
// schema, not its configuration. A nil *CRDCache decodes every time. It is safe for
// concurrent use.
//
// Each kept object is also kept as the JSON text the generate command
// prints for it (manifests.JSONDocument), so that the copies a render did
// not change are not encoded again (KnownJSON): for an operator chart,
// megabytes of JSON per render. An entry counts its YAML and its JSON text
// (a rendered document's YAML twice: it keeps that text, see document).
type CRDCache struct {
	kept *lru.Cache[[32]byte, *crdObjects] // never handed out

	// seed keys rendered documents (see docKey).
	seed maphash.Seed

	// handed are the copies get handed out whose kept text KnownJSON may
	// give, by the address of the copy's map; at most the cache's bound of
	// text, forgotten all at once past that (a copy that is never encoded,
	// as in a failed render, is then forgotten; one that is encoded is at
	// once). The address only finds a candidate: the text is given only
	// when the object is still Equal to the kept one, so an address reused
	// by another object after a copy was collected gives nothing wrong.
	handedMu    sync.Mutex
	handed      map[uintptr]handedCopy
	handedBytes int64
}

// crdObjects are the objects of one text, and the JSON text of each (nil
// for one JSONDocument refuses); doc is the text itself for a rendered
// document (see document), nil for a crds/ file.
type crdObjects struct {
	objs  []manifests.Object
	texts [][]byte
	doc   []byte
}

type handedCopy struct {
	kept manifests.Object
	text []byte
}

// NewCRDCache returns a cache of at most maxBytes of CRD text (<= 0:
// DefaultCRDCacheSize).
func NewCRDCache(maxBytes int64) *CRDCache {
	if maxBytes <= 0 {
		maxBytes = DefaultCRDCacheSize
	}
	return &CRDCache{kept: lru.New[[32]byte, *crdObjects](maxBytes, minEntryCost), seed: maphash.MakeSeed(), handed: map[uintptr]handedCopy{}}
}

// KnownJSON is a manifests.Known: the JSON text of o when o is a copy get
// handed out (of this cache, not yet asked for) and still Equal to the
// object it copies, i.e. when encoding o would give that very text. A nil
// *CRDCache knows nothing.
func (c *CRDCache) KnownJSON(o manifests.Object) ([]byte, bool) {
	if c == nil || o == nil {
		return nil, false
	}
	addr := reflect.ValueOf(o).Pointer()
	c.handedMu.Lock()
	h, ok := c.handed[addr]
	if ok {
		delete(c.handed, addr)
		c.handedBytes -= int64(len(h.text))
	}
	c.handedMu.Unlock()
	if !ok || !manifests.Equal(h.kept, o) {
		return nil, false
	}
	return h.text, true
}

// hand records the copies of kept objects get hands out (see handed).
func (c *CRDCache) hand(kept *crdObjects, copies []manifests.Object) {
	c.handedMu.Lock()
	defer c.handedMu.Unlock()
	for i, o := range copies {
		text := kept.texts[i]
		if text == nil {
			continue
		}
		if c.handedBytes+int64(len(text)) > c.kept.Max() {
			clear(c.handed)
			c.handedBytes = 0
		}
		c.handed[reflect.ValueOf(o).Pointer()] = handedCopy{kept: kept.objs[i], text: text}
		c.handedBytes += int64(len(text))
	}
}

// decode returns a copy of the objects of text (a crds/ file as Helm prints
// it in the release manifest), decoding it on a miss.
func (c *CRDCache) decode(name string, text []byte) ([]manifests.Object, error) {
	return c.decodePrinted(name, printedText{text: text, size: int64(len(text)), nodes: yamlfile.StructureCount(text)})
}

// decodePrinted is decode of a printed crds/ file: its key, when t holds
// it, is not computed again, nor its text printed unless it is decoded,
// nor its structural characters counted again (t.nodes, counted for the
// release's bound, is the count manifests.Decode's bounds are held to).
func (c *CRDCache) decodePrinted(name string, t printedText) ([]manifests.Object, error) {
	if c == nil || t.size > c.kept.Max() {
		return manifests.DecodeCounted(name, t.printed(), t.nodes)
	}
	key, ok := t.key, t.keyed
	if !ok {
		key = sha256.Sum256(t.printed())
	}
	if objs, ok := c.get(key, nil); ok {
		return objs, nil
	}
	objs, err := manifests.DecodeCounted(name, t.printed(), t.nodes)
	if err != nil {
		return nil, err
	}
	c.put(key, objs, nil, t.size)
	return objs, nil
}

// document is a manifests.DocumentHook: a rendered document that holds
// CustomResourceDefinitions only (a chart that renders its CRDs from
// templates, as cert-manager's does) is kept like a crds/ file, by its text.
// Other documents are decoded every time and never kept: they carry an
// Application's configuration. A nil *CRDCache keeps nothing.
//
// Rendered documents come in every render (cert-manager's CRDs: 1 MB), so
// they are not keyed by SHA-256 as crds/ files are, whose keys a kept
// chart learns once: a kept document holds its text, which a document
// must equal to be given its objects, and is keyed by a hash of it with
// the cache's random seed (docKey). Several times faster, and no more
// open to collisions: two texts under one key are two misses, never one
// text's objects for the other.
func (c *CRDCache) document(doc []byte, decode func() ([]manifests.Object, error)) ([]manifests.Object, error) {
	if c == nil || 2*int64(len(doc)) > c.kept.Max() || !bytes.Contains(doc, []byte("kind: CustomResourceDefinition")) {
		return decode()
	}
	key := c.docKey(doc)
	if objs, ok := c.get(key, doc); ok {
		return objs, nil
	}
	objs, err := decode()
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		if o["kind"] != "CustomResourceDefinition" {
			return objs, nil
		}
	}
	// Counted twice: the text kept, and the objects (about 4 times it).
	c.put(key, objs, bytes.Clone(doc), 2*int64(len(doc)))
	return objs, nil
}

// docKey is the key of a rendered document: its hash with the cache's
// seed and its length, marked so that it is no SHA-256 of a crds/ file's
// text (a match needs 32 bytes of SHA-256 to equal them).
func (c *CRDCache) docKey(doc []byte) [32]byte {
	var key [32]byte
	copy(key[:8], "rendered")
	binary.LittleEndian.PutUint64(key[8:], maphash.Bytes(c.seed, doc))
	binary.LittleEndian.PutUint64(key[16:], uint64(len(doc)))
	return key
}

// get returns a copy of the objects kept under key for doc, a rendered
// document's text (nil: a crds/ file's, keyed by its SHA-256).
func (c *CRDCache) get(key [32]byte, doc []byte) ([]manifests.Object, bool) {
	kept, ok := c.kept.Get(key)
	if !ok || (doc == nil) != (kept.doc == nil) || !bytes.Equal(kept.doc, doc) {
		return nil, false
	}
	objs := cloneObjects(kept.objs)
	c.hand(kept, objs)
	return objs, true
}

// put keeps a copy of objs under key, and their JSON texts, and doc (a
// rendered document's text, or nil); size is what the YAML text counts.
func (c *CRDCache) put(key [32]byte, objs []manifests.Object, doc []byte, size int64) {
	kept := &crdObjects{objs: cloneObjects(objs), texts: make([][]byte, len(objs)), doc: doc}
	for i, o := range kept.objs {
		if text, err := manifests.JSONDocument(o); err == nil {
			kept.texts[i] = text
			size += int64(len(text))
		}
	}
	c.kept.Put(key, kept, size)
}

// crdText is a crds/ file as Helm prints it in the release manifest.
func crdText(filename string, data []byte) []byte {
	return sourceText(filename, data)
}

// sourceText is a document of file as Helm prints it in the release
// manifest, "---\n# Source: <file>\n<doc>\n": fmt.Appendf's text, copied
// once into a buffer of its size (fmt copies it twice, growing its own
// buffer on the way: 1 MB of cert-manager's CRDs in every render).
func sourceText[T string | []byte](file string, doc T) []byte {
	const head, tail = "---\n# Source: ", "\n"
	b := make([]byte, 0, len(head)+len(file)+1+len(doc)+len(tail))
	b = append(b, head...)
	b = append(b, file...)
	b = append(b, '\n')
	b = append(b, doc...)
	return append(b, tail...)
}

// crdTextSize is len(crdText(filename, data)).
func crdTextSize(filename string, data []byte) int64 {
	return int64(len("---\n# Source: \n\n") + len(filename) + len(data))
}

// predecoded is the outcome of decoding a chart's crds/ files while Helm
// renders its templates (see predecodeCRDs).
type predecoded struct {
	done  chan struct{}
	objs  map[*common.File][]manifests.Object // files decoded without error
	texts map[crdKey]printedText              // every file as printed
}

// crdKey is a crds/ file as printed: a subchart's file is printed under
// the name of each alias of the subchart.
type crdKey struct {
	file     *common.File
	filename string
}

// printedText is a crds/ file as printed (crdText), its structural
// characters and, when keyed, its CRDCache key.
type printedText struct {
	file  crdKey
	text  []byte // nil until printed()
	size  int64  // len of the text
	nodes int
	key   [32]byte
	keyed bool
}

// printed is the text of t, printed on first use.
func (t *printedText) printed() []byte {
	if t.text == nil {
		t.text = crdText(t.file.filename, t.file.file.Data)
	}
	return t.text
}

// crdPrints are what renders of a chart kept by a ChartCache learnt about
// its crds/ files: per file as printed, its size, structural characters
// and CRDCache key. The files' bytes never change (see ChartCache) and the
// keys name the very *common.File of the kept chart that every copy shares,
// so later renders of the chart neither print, count nor hash 10 MB of
// CRDs again. Never changed once stored: a render that learns more stores
// a new map.
type crdPrints map[crdKey]crdPrint

type crdPrint struct {
	size  int64
	nodes int
	key   [32]byte
}

// predecodeCRDs decodes the crds/ files of c and of all its subcharts in
// the background, on another core, while Helm renders the templates: which
// subcharts are enabled is only known once Helm has processed the values,
// so files of disabled subcharts are decoded for nothing, and a file that
// fails here is decoded again (for its error) only if the render uses it.
// Nothing is decoded when the files hold more than a whole stream may
// (MaxStreamNodes): releaseObjects then refuses or decodes what is used.
// The result is ready when done is closed; the texts of the files and
// their counts are kept for chartCRDs. known, when set (c is a copy of a
// chart a ChartCache keeps, and cache is set), holds what earlier renders
// of the chart learnt about its files (crdPrints), and gets what this one
// learns.
func predecodeCRDs(c *chart.Chart, cache *CRDCache, known *atomic.Pointer[crdPrints]) *predecoded {
	p := &predecoded{done: make(chan struct{}), objs: map[*common.File][]manifests.Object{}, texts: map[crdKey]printedText{}}
	crds := c.CRDObjects()
	if len(crds) == 0 {
		close(p.done)
		return p
	}
	if cache == nil {
		known = nil // keys are for the CRDCache
	}
	go func() {
		defer close(p.done)
		var prints crdPrints
		if known != nil {
			if k := known.Load(); k != nil {
				prints = *k
			}
		}
		learnt := false
		nodes := 0
		for _, crd := range crds {
			k := crdKey{crd.File, crd.Filename}
			t := printedText{file: k}
			if pr, ok := prints[k]; ok {
				t.size, t.nodes, t.key, t.keyed = pr.size, pr.nodes, pr.key, true
			} else {
				t.size = crdTextSize(k.filename, k.file.Data)
				t.nodes = yamlfile.StructureCount(t.printed())
				if known != nil {
					t.key, t.keyed, learnt = sha256.Sum256(t.text), true, true
				}
			}
			p.texts[k] = t
			nodes += t.nodes
		}
		if learnt {
			next := make(crdPrints, len(p.texts))
			maps.Copy(next, prints)
			for k, t := range p.texts {
				next[k] = crdPrint{size: t.size, nodes: t.nodes, key: t.key}
			}
			known.Store(&next)
		}
		if nodes > manifests.MaxStreamNodes {
			return
		}
		for _, crd := range crds {
			if objs, err := cache.decodePrinted("chart "+c.Name(), p.texts[crdKey{crd.File, crd.Filename}]); err == nil {
				p.objs[crd.File] = objs
			}
		}
	}()
	return p
}

// wait returns the predecoded files once the background decoding is done.
func (p *predecoded) wait() map[*common.File][]manifests.Object {
	if p == nil {
		return nil
	}
	<-p.done
	return p.objs
}

// releaseObjects decodes what `helm template --include-crds` prints for a
// release of manifest text manifest (the CRDs of the chart c as rendered,
// crds/ files in Helm's order, unless skipCRDs; then the manifest, in
// Helm's order) into objects, with the
// bounds of one manifests.Decode of that whole stream: MaxStreamNodes
// structural characters and MaxObjects objects in all.
//
// pre holds crds/ files already printed and decoded (predecodeCRDs): each
// object is used once, by this render.
func releaseObjects(c *chart.Chart, manifest string, skipCRDs bool, crds *CRDCache, pre *predecoded) ([]manifests.Object, error) {
	name := "chart " + c.Name()
	printed := chartCRDs(c, skipCRDs, pre)
	if nodes := printed.nodes + yamlfile.StructureCount([]byte(manifest)); nodes > manifests.MaxStreamNodes {
		return nil, fmt.Errorf("%s: %d structural characters (',' '[' '{' '-' ':' '?' newline), more than the limit of %d: %w: %w",
			name, nodes, manifests.MaxStreamNodes, errdef.ErrInvalidInput, errdef.ErrLimitExceeded)
	}
	objs, err := printed.decode(name, crds, pre.wait())
	if err != nil {
		return nil, err
	}
	var hook manifests.DocumentHook
	if crds != nil {
		hook = crds.document
	}
	rest, err := manifests.DecodeWith(name, []byte(manifest), hook)
	if err != nil {
		return nil, err
	}
	if objs = append(objs, rest...); len(objs) > manifests.MaxObjects {
		return nil, fmt.Errorf("%s: more than %d objects: %w: %w", name, manifests.MaxObjects, errdef.ErrInvalidInput, errdef.ErrLimitExceeded)
	}
	return objs, nil
}

// printedCRDs are the crds/ files of a chart as helm template
// --include-crds prints them.
type printedCRDs struct {
	texts []printedText
	nodes int // structural characters of texts
}

// chartCRDs are the crds/ files of c and its enabled subcharts in Helm's
// order (none with skip), as pre printed them (when it is done) or else
// printed here.
func chartCRDs(c *chart.Chart, skip bool, pre *predecoded) printedCRDs {
	var p printedCRDs
	if skip {
		return p
	}
	var texts map[crdKey]printedText
	if pre != nil {
		pre.wait()
		texts = pre.texts
	}
	for _, crd := range c.CRDObjects() {
		k := crdKey{crd.File, crd.Filename}
		t, ok := texts[k]
		if !ok {
			t = printedText{file: k, text: crdText(k.filename, k.file.Data)}
			t.size = int64(len(t.text))
			t.nodes = yamlfile.StructureCount(t.text)
		}
		p.texts = append(p.texts, t)
		p.nodes += t.nodes
	}
	return p
}

// decode decodes the files, taking those in pre (predecodeCRDs): each
// object is used once, by this render.
func (p printedCRDs) decode(name string, crds *CRDCache, pre map[*common.File][]manifests.Object) ([]manifests.Object, error) {
	var objs []manifests.Object
	for _, t := range p.texts {
		o, ok := pre[t.file.file]
		if !ok {
			var err error
			if o, err = crds.decodePrinted(name, t); err != nil {
				return nil, err
			}
		}
		delete(pre, t.file.file) // a file included twice gets objects of its own
		objs = append(objs, o...)
	}
	return objs, nil
}

// cloneObjects deep-copies decoded objects (JSON-compatible values).
func cloneObjects(objs []manifests.Object) []manifests.Object {
	out := make([]manifests.Object, len(objs))
	for i, o := range objs {
		out[i] = cloneValue(o).(map[string]any)
	}
	return out
}

func cloneValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = cloneValue(e)
		}
		return m
	case []any:
		l := make([]any, len(v))
		for i, e := range v {
			l[i] = cloneValue(e)
		}
		return l
	}
	return v
}
