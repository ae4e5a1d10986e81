package ocimapping

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/archive"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// Media types of the OCM-on-OCI mapping.
const (
	MediaTypeComponentConfig        = "application/vnd.ocm.software.component.config.v1+json"
	MediaTypeLegacyComponentConfig  = "application/vnd.gardener.cloud.cnudie.component.config.v1+json"
	MediaTypeLegacyComponentConfig2 = "application/vnd.oci.gardener.cloud.cnudie.component-descriptor-metadata.config.v2+json"

	MediaTypeDescriptorTar  = "application/vnd.ocm.software.component-descriptor.v2+yaml+tar"
	MediaTypeDescriptorJSON = "application/vnd.ocm.software.component-descriptor.v2+json"
	MediaTypeDescriptorYAML = "application/vnd.ocm.software.component-descriptor.v2+yaml"

	legacyDescriptorPrefix = "application/vnd.gardener.cloud.cnudie.component-descriptor.v2+"

	// AnnotationDescriptor marks the descriptor manifest inside an index.
	AnnotationDescriptor = "software.ocm.descriptor"
	// AnnotationComponentVersion names "<component>:<version>" on a manifest.
	AnnotationComponentVersion = "software.ocm.componentversion"
	// AnnotationArtifact lists the OCM artifacts a layer holds.
	AnnotationArtifact = "software.ocm.artifact"

	descriptorFileName = "component-descriptor.yaml"
	// A descriptor layer is one file (the OCM CLI writes nothing else);
	// these bound what a hostile one may hold besides.
	maxDescriptorLayerFiles       = 64
	maxDescriptorLayerSize  int64 = 2 * ocm.MaxDescriptorSize
)

// Limits for metadata blobs; content blobs have their own limits at their consumers.
const (
	MaxManifestSize = 4 << 20
	MaxConfigSize   = 1 << 20
)

// Fetcher fetches content by OCI descriptor. oras-go's content.Fetcher satisfies it.
type Fetcher interface {
	Fetch(ctx context.Context, target ocispec.Descriptor) (io.ReadCloser, error)
}

// componentConfig is the config blob of a component version manifest.
type componentConfig struct {
	ComponentDescriptorLayer *ocispec.Descriptor `json:"componentDescriptorLayer"`
}

// FetchVerified fetches desc completely (at most limit bytes) and verifies it.
func FetchVerified(ctx context.Context, f Fetcher, desc ocispec.Descriptor, limit int64) ([]byte, error) {
	rc, err := f.Fetch(ctx, desc)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	size := desc.Size
	if size == 0 {
		size = -1 // unknown (index entries of some writers omit it)
	}
	b, err := blob.ReadAll(rc, desc.Digest.String(), size, limit)
	if err != nil {
		return nil, fmt.Errorf("blob %s: %w", desc.Digest, err)
	}
	return b, nil
}

// ResolveManifest reads the manifest named by desc. An index is resolved to
// its descriptor manifest (see ResolveVersion). It returns the manifest and
// the descriptor of the manifest actually used.
func ResolveManifest(ctx context.Context, f Fetcher, desc ocispec.Descriptor) (*ocispec.Manifest, ocispec.Descriptor, error) {
	v, err := ResolveVersion(ctx, f, desc)
	if err != nil {
		return nil, desc, err
	}
	return v.Manifest, v.Desc, nil
}

// ReadDescriptor reads the component descriptor of a component version manifest.
func ReadDescriptor(ctx context.Context, f Fetcher, m *ocispec.Manifest) (*ocm.Descriptor, error) {
	return (*Descriptors)(nil).Read(ctx, f, m)
}

// Read is ReadDescriptor, with the descriptor decoded once per descriptor
// layer and kept (see Descriptors): the config and the layer are still
// fetched and verified every time.
func (ds *Descriptors) Read(ctx context.Context, f Fetcher, m *ocispec.Manifest) (*ocm.Descriptor, error) {
	switch m.Config.MediaType {
	case MediaTypeComponentConfig, MediaTypeLegacyComponentConfig, MediaTypeLegacyComponentConfig2:
	default:
		return nil, fmt.Errorf("%w: manifest config media type %s is not an OCM component config", errdef.ErrInvalidDescriptor, errdef.Quote(m.Config.MediaType))
	}
	// The config names the descriptor layer, and every OCM CLI puts it
	// among the manifest's layers with a descriptor media type: that layer
	// is read while the config is, one round trip fewer for a cold lookup.
	// It is used only when the config names it.
	guess, guessed := descriptorLayerGuess(m)
	var (
		guessRaw  []byte
		guessErr  error
		guessDone = make(chan struct{})
	)
	if guessed {
		go func() {
			defer close(guessDone)
			guessRaw, guessErr = FetchVerified(ctx, f, guess, ocm.MaxDescriptorSize+64<<10)
		}()
	} else {
		close(guessDone)
	}
	cfgRaw, err := FetchVerified(ctx, f, m.Config, MaxConfigSize)
	<-guessDone
	if err != nil {
		return nil, fmt.Errorf("component config: %w", err)
	}
	var cfg componentConfig
	if err := json.Unmarshal(cfgRaw, &cfg); err != nil {
		return nil, fmt.Errorf("%w: component config: %v", errdef.ErrInvalidDescriptor, err)
	}
	layer := cfg.ComponentDescriptorLayer
	if layer == nil {
		if len(m.Layers) == 0 {
			return nil, fmt.Errorf("%w: component config names no descriptor layer and the manifest has no layers", errdef.ErrInvalidDescriptor)
		}
		layer = &m.Layers[0]
	}
	if layer.MediaType == "" {
		for _, l := range m.Layers {
			if l.Digest == layer.Digest {
				layer.MediaType = l.MediaType
			}
		}
	}
	var raw []byte
	if guessed && layer.Digest == guess.Digest && guessErr == nil {
		raw = guessRaw
	} else {
		raw, err = FetchVerified(ctx, f, *layer, ocm.MaxDescriptorSize+64<<10)
	}
	if err != nil {
		return nil, fmt.Errorf("descriptor layer: %w", err)
	}
	return ds.decode(layer.Digest, layer.MediaType, raw, func(raw []byte) (*ocm.Descriptor, error) {
		doc, err := descriptorBytes(layer.MediaType, raw)
		if err != nil {
			return nil, err
		}
		return ocm.DecodeDescriptor(doc)
	})
}

// descriptorLayerGuess is the first layer of m with a descriptor media type.
func descriptorLayerGuess(m *ocispec.Manifest) (ocispec.Descriptor, bool) {
	for _, l := range m.Layers {
		switch l.MediaType {
		case MediaTypeDescriptorJSON, MediaTypeDescriptorYAML, MediaTypeDescriptorTar,
			legacyDescriptorPrefix + "json", legacyDescriptorPrefix + "yaml", legacyDescriptorPrefix + "yaml+tar":
			return l, true
		}
	}
	return ocispec.Descriptor{}, false
}

func descriptorBytes(mediaType string, raw []byte) ([]byte, error) {
	switch mediaType {
	case MediaTypeDescriptorJSON, MediaTypeDescriptorYAML, legacyDescriptorPrefix + "json", legacyDescriptorPrefix + "yaml":
		return raw, nil
	case MediaTypeDescriptorTar, legacyDescriptorPrefix + "yaml+tar", "":
		// The plugin's one tar reader (package archive): entries are
		// confined and counted; a descriptor layer holds one small file.
		tree, err := archive.ReadTree(bytes.NewReader(raw), archive.WithMaxFiles(maxDescriptorLayerFiles),
			archive.WithMaxSize(maxDescriptorLayerSize), archive.WithMaxFileSize(ocm.MaxDescriptorSize+1))
		if err != nil {
			return nil, fmt.Errorf("%w: descriptor layer: %w", errdef.ErrInvalidDescriptor, err)
		}
		b, err := tree.ReadFile(descriptorFileName)
		if err != nil {
			return nil, fmt.Errorf("%w: descriptor layer has no %s", errdef.ErrInvalidDescriptor, descriptorFileName)
		}
		return b, nil
	default:
		return nil, fmt.Errorf("%w: descriptor layer media type %s", errdef.ErrUnsupportedMediaType, errdef.Quote(mediaType))
	}
}

// LocalBlobLayers returns the layers that hold a localBlob: its localReference
// is a layer digest, or a comma-separated list of chunk digests to concatenate.
func LocalBlobLayers(m *ocispec.Manifest, localReference string) ([]ocispec.Descriptor, error) {
	var out []ocispec.Descriptor
	for _, ref := range strings.Split(localReference, ",") {
		ref = strings.TrimSpace(ref)
		d, err := blob.Normalize(ref)
		if err != nil {
			return nil, fmt.Errorf("localReference %s: %w", errdef.Quote(localReference), err)
		}
		found := false
		for _, l := range m.Layers {
			if l.Digest.String() == d {
				out = append(out, l)
				found = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("local blob %s is not a layer of the component version: %w", d, errdef.ErrNotFound)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: empty localReference", errdef.ErrInvalidDescriptor)
	}
	return out, nil
}

// OpenLayers opens layers as one stream; each layer is verified as it is read.
func OpenLayers(ctx context.Context, f Fetcher, layers []ocispec.Descriptor) (io.ReadCloser, int64, error) {
	var total int64
	for _, l := range layers {
		total += l.Size
	}
	return &chunkReader{ctx: ctx, f: f, layers: layers}, total, nil
}

// chunkReader concatenates verified layers, opening each only when needed.
type chunkReader struct {
	ctx    context.Context
	f      Fetcher
	layers []ocispec.Descriptor
	cur    io.ReadCloser
}

func (c *chunkReader) Read(p []byte) (int, error) {
	for {
		if c.cur == nil {
			if len(c.layers) == 0 {
				return 0, io.EOF
			}
			l := c.layers[0]
			c.layers = c.layers[1:]
			rc, err := c.f.Fetch(c.ctx, l)
			if err != nil {
				return 0, fmt.Errorf("blob %s: %w", l.Digest, err)
			}
			size := l.Size
			if size == 0 {
				size = -1
			}
			v, err := blob.NewVerifier(rc, l.Digest.String(), size)
			if err != nil {
				rc.Close()
				return 0, err
			}
			c.cur = v
		}
		n, err := c.cur.Read(p)
		if err == io.EOF {
			c.cur.Close()
			c.cur = nil
			if n > 0 {
				return n, nil
			}
			continue
		}
		return n, err
	}
}

func (c *chunkReader) Close() error {
	if c.cur != nil {
		return c.cur.Close()
	}
	return nil
}
