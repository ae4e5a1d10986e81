package artifactset

import (
	"errors"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

// A set without the layer asked for is refused with a line that names
// what it has, bounded however many layers of whatever media types its
// manifest lists (a tenant's descriptor and blob choose them).
func TestLayerRefusalIsBounded(t *testing.T) {
	var layers []ocispec.Descriptor
	for range 1000 {
		layers = append(layers, ocispec.Descriptor{MediaType: "application/vnd.example." + strings.Repeat("x", 200) + "\nforged: line"})
	}
	s := &Set{Manifest: ocispec.Manifest{Layers: layers}}
	_, _, err := s.Layer("application/vnd.cncf.helm.chart.content.v1.tar+gzip")
	if !errors.Is(err, errdef.ErrUnsupportedMediaType) {
		t.Fatalf("got %v, want ErrUnsupportedMediaType", err)
	}
	if msg := err.Error(); len(msg) > 2*errdef.MaxMessage || strings.Contains(msg, "\n") || !strings.Contains(msg, "application/vnd.example.") {
		t.Errorf("refusal of %d bytes (one line: %v), want a bounded line naming the media types", len(msg), !strings.Contains(msg, "\n"))
	}
}
