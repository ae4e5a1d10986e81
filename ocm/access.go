package ocm

import (
	"encoding/json"
	"fmt"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/accessmethod"
)

// Canonical access type names (without the optional "/v1" suffix), from the
// table of access methods (internal/source/ocm/accessmethod), which also holds
// their other spellings.
const (
	AccessLocalBlob            = accessmethod.LocalBlob
	AccessLocalFilesystemBlob  = accessmethod.LocalFilesystemBlob
	AccessOCIArtifact          = accessmethod.OCIArtifact
	AccessOCIBlob              = accessmethod.OCIBlob
	AccessRelativeOCIReference = accessmethod.RelativeOCIReference
	AccessHelm                 = accessmethod.Helm
	AccessNone                 = accessmethod.None
)

// Access is an access specification: its type plus type-specific fields, kept
// as decoded so that unknown types survive for error messages and signing.
type Access struct {
	Type   string
	Fields map[string]any
}

// UnmarshalJSON keeps every field; "type" is also stored in Type.
func (a *Access) UnmarshalJSON(b []byte) error {
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("access: %v", err)
	}
	t, _ := m["type"].(string)
	a.Type, a.Fields = t, m
	return nil
}

// MarshalJSON writes the fields back, type included.
func (a Access) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(a.Fields)+1)
	for k, v := range a.Fields {
		m[k] = v
	}
	if a.Type != "" {
		m["type"] = a.Type
	}
	return json.Marshal(m)
}

// Kind returns the canonical access type ("localBlob", "ociArtifact", …) for any
// accepted spelling, version suffix removed; unknown types come back as written.
func (a Access) Kind() string { return accessmethod.Canonical(a.Type) }

// String returns the string field key, or "" when absent or not a string.
func (a Access) String(key string) string {
	s, _ := a.Fields[key].(string)
	return s
}

// GlobalAccess returns the globalAccess of a localBlob, if any.
func (a Access) GlobalAccess() (*Access, bool) {
	m, ok := a.Fields["globalAccess"].(map[string]any)
	if !ok || len(m) == 0 {
		return nil, false
	}
	t, _ := m["type"].(string)
	return &Access{Type: t, Fields: m}, true
}
