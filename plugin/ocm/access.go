package ocm

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Canonical access type names (without the optional "/v1" suffix).
const (
	AccessLocalBlob            = "localBlob"
	AccessLocalFilesystemBlob  = "localFilesystemBlob"
	AccessOCIArtifact          = "ociArtifact"
	AccessOCIBlob              = "ociBlob"
	AccessRelativeOCIReference = "relativeOciReference"
	AccessHelm                 = "helm"
	AccessNone                 = "none"
)

var accessAliases = map[string]string{
	"localblob":            AccessLocalBlob,
	"localfilesystemblob":  AccessLocalFilesystemBlob,
	"ociartifact":          AccessOCIArtifact,
	"ociregistry":          AccessOCIArtifact,
	"ociimage":             AccessOCIArtifact,
	"ociblob":              AccessOCIBlob,
	"ociimagelayer":        AccessOCIBlob,
	"relativeocireference": AccessRelativeOCIReference,
	"helm":                 AccessHelm,
	"none":                 AccessNone,
}

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
func (a Access) Kind() string {
	t := a.Type
	if i := strings.LastIndex(t, "/"); i >= 0 {
		t = t[:i]
	}
	if k, ok := accessAliases[strings.ToLower(t)]; ok {
		return k
	}
	return t
}

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
