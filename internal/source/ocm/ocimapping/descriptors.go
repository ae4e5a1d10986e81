package ocimapping

import (
	"github.com/opencontainers/go-digest"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/lru"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// A warm generation read the same descriptor layer as the one before it
// (from the blob cache, verified) and decoded it again: YAML to JSON, then
// JSON, some 4 % of a render-server worker's CPU on podinfo.

// DefaultDescriptorsSize bounds the descriptors a Descriptors keeps,
// counted at descriptorCost of their bytes.
const DefaultDescriptorsSize = 16 << 20

// minDescriptorCost is what a Descriptors counts an entry at least (a
// descriptor's structures): at most 4096 entries by default.
const minDescriptorCost = 4 << 10

// descriptorCost is the decoded size of a descriptor per byte of its
// document, about: the document itself (Raw) and what it decodes to.
const descriptorCost = 4

// Descriptors keeps decoded component descriptors for a long-lived process
// (a render-server worker), by the digest of the descriptor layer and its
// media type (how the document is taken out of the layer). A descriptor is
// taken from here only after the layer's bytes were fetched for the
// generation that asks, through its own fetcher (its credentials, the
// cache's vouches), and verified against that digest: what one tenant's
// generation kept, another gets only for the identical bytes, which it
// would have decoded to the same descriptor. Signature verification and
// every other check on a descriptor run on each generation as before. A hit
// hands out a deep copy (ocm.Descriptor.Clone), so nothing a generation
// does with its descriptor reaches the kept one. At most maxBytes (each
// entry counted at descriptorCost times its document, at least 4 KiB), the
// least recently used dropped first. A nil *Descriptors keeps nothing.
// Safe for concurrent use.
type Descriptors struct {
	kept *lru.Cache[descriptorKey, *ocm.Descriptor]
}

type descriptorKey struct {
	layer     digest.Digest
	mediaType string
}

// NewDescriptors returns a Descriptors of at most maxBytes (<= 0:
// DefaultDescriptorsSize).
func NewDescriptors(maxBytes int64) *Descriptors {
	if maxBytes <= 0 {
		maxBytes = DefaultDescriptorsSize
	}
	return &Descriptors{lru.New[descriptorKey, *ocm.Descriptor](maxBytes, minDescriptorCost)}
}

// Len is the number of descriptors kept.
func (ds *Descriptors) Len() int {
	if ds == nil {
		return 0
	}
	return ds.kept.Len()
}

// decode is decode(raw) for raw, the verified bytes of layer, of media type
// mediaType: a copy of the descriptor kept for them, else decoded and kept.
// Errors are not kept: a layer that failed is decoded again, and fails with
// the same error.
func (ds *Descriptors) decode(layer digest.Digest, mediaType string, raw []byte, decode func([]byte) (*ocm.Descriptor, error)) (*ocm.Descriptor, error) {
	if ds == nil || layer == "" {
		return decode(raw)
	}
	key := descriptorKey{layer: layer, mediaType: mediaType}
	if d, ok := ds.kept.Get(key); ok {
		return d.Clone(), nil
	}
	d, err := decode(raw)
	if err != nil {
		return nil, err
	}
	ds.kept.Put(key, d.Clone(), descriptorCost*int64(len(d.Raw)))
	return d, nil
}
