package cmpservice

import (
	"errors"
	"fmt"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
)

// The messages of plugin.proto (and repository.proto's
// ParameterAnnouncement), with their field numbers. Each encodes itself
// (appendTo) or decodes itself (decode), as the side of the contract it is
// on needs; codec dispatches on those methods.

// envEntry is EnvEntry: one variable of the generation's environment.
type envEntry struct {
	Name, Value string // 1, 2
}

// metadata is ManifestRequestMetadata, the first message of a stream.
type metadata struct {
	AppName    string     // 1
	AppRelPath string     // 2
	Checksum   string     // 3: hex SHA-256 of the tgz stream
	Size       int64      // 4
	Env        []envEntry // 5
}

// streamRequest is AppStreamRequest: metadata (1) or a file chunk (2, a
// File message whose field 1 is the bytes).
type streamRequest struct {
	Metadata *metadata
	Chunk    []byte
	HasChunk bool
}

// manifestResponse is ManifestResponse.
type manifestResponse struct {
	Manifests  []string // 1
	SourceType string   // 2
}

// repositoryResponse is RepositoryResponse.
type repositoryResponse struct {
	IsSupported, IsDiscoveryEnabled bool // 1, 2
}

// pluginConfigResponse is CheckPluginConfigurationResponse.
type pluginConfigResponse struct {
	IsDiscoveryConfigured, ProvideGitCreds bool // 1, 2
}

// announcement is repository.ParameterAnnouncement, with the JSON names the
// parameters command prints (Argo CD's own).
type announcement struct {
	Name           string            `json:"name,omitempty"`           // 1
	Title          string            `json:"title,omitempty"`          // 2
	Tooltip        string            `json:"tooltip,omitempty"`        // 3
	Required       bool              `json:"required,omitempty"`       // 4
	ItemType       string            `json:"itemType,omitempty"`       // 5
	CollectionType string            `json:"collectionType,omitempty"` // 6
	String         string            `json:"string,omitempty"`         // 7
	Array          []string          `json:"array,omitempty"`          // 8
	Map            map[string]string `json:"map,omitempty"`            // 9
}

// parametersResponse is ParametersAnnouncementResponse.
type parametersResponse struct {
	Announcements []announcement // 1
}

// empty is google.protobuf.Empty.
type empty struct{}

var errMalformed = errors.New("malformed message")

// fields calls f for every field of a message; f returns how many bytes of
// the value it consumed, or -1 to skip an unknown field.
func fields(b []byte, f func(num protowire.Number, typ protowire.Type, b []byte) int) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: %v", errMalformed, protowire.ParseError(n))
		}
		b = b[n:]
		m := f(num, typ, b)
		if m < 0 {
			m = protowire.ConsumeFieldValue(num, typ, b)
		}
		if m < 0 {
			return fmt.Errorf("%w: field %d: %v", errMalformed, num, protowire.ParseError(m))
		}
		b = b[m:]
	}
	return nil
}

// bytesField consumes a length-delimited value into *dst; -1 for another
// wire type (skipped as unknown).
func bytesField(typ protowire.Type, b []byte, dst *[]byte) int {
	if typ != protowire.BytesType {
		return -1
	}
	v, n := protowire.ConsumeBytes(b)
	if n >= 0 {
		*dst = v
	}
	return n
}

func stringField(typ protowire.Type, b []byte, dst *string) int {
	var v []byte
	n := bytesField(typ, b, &v)
	if n >= 0 {
		*dst = string(v)
	}
	return n
}

func varintField(typ protowire.Type, b []byte, dst *uint64) int {
	if typ != protowire.VarintType {
		return -1
	}
	v, n := protowire.ConsumeVarint(b)
	if n >= 0 {
		*dst = v
	}
	return n
}

func boolField(typ protowire.Type, b []byte, dst *bool) int {
	var v uint64
	n := varintField(typ, b, &v)
	if n >= 0 {
		*dst = v != 0
	}
	return n
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendBool(b []byte, num protowire.Number, v bool) []byte {
	if !v {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, 1)
}

// appendMessage appends a length-delimited submessage built by f.
func appendMessage(b []byte, num protowire.Number, f func([]byte) []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, f(nil))
}

func (e *envEntry) decode(b []byte) error {
	return fields(b, func(num protowire.Number, typ protowire.Type, b []byte) int {
		switch num {
		case 1:
			return stringField(typ, b, &e.Name)
		case 2:
			return stringField(typ, b, &e.Value)
		}
		return -1
	})
}

func (e envEntry) appendTo(b []byte) []byte {
	return appendString(appendString(b, 1, e.Name), 2, e.Value)
}

func (m *metadata) decode(b []byte) error {
	return fields(b, func(num protowire.Number, typ protowire.Type, b []byte) int {
		switch num {
		case 1:
			return stringField(typ, b, &m.AppName)
		case 2:
			return stringField(typ, b, &m.AppRelPath)
		case 3:
			return stringField(typ, b, &m.Checksum)
		case 4:
			var v uint64
			n := varintField(typ, b, &v)
			m.Size = int64(v)
			return n
		case 5:
			var v []byte
			n := bytesField(typ, b, &v)
			if n >= 0 {
				var e envEntry
				if e.decode(v) != nil {
					return -1
				}
				m.Env = append(m.Env, e)
			}
			return n
		}
		return -1
	})
}

func (m *metadata) appendTo(b []byte) []byte {
	b = appendString(b, 1, m.AppName)
	b = appendString(b, 2, m.AppRelPath)
	b = appendString(b, 3, m.Checksum)
	if m.Size != 0 {
		b = protowire.AppendTag(b, 4, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(m.Size))
	}
	for _, e := range m.Env {
		b = appendMessage(b, 5, e.appendTo)
	}
	return b
}

func (r *streamRequest) decode(b []byte) error {
	*r = streamRequest{}
	var bad error
	err := fields(b, func(num protowire.Number, typ protowire.Type, b []byte) int {
		var v []byte
		switch num {
		case 1:
			n := bytesField(typ, b, &v)
			if n >= 0 {
				r.Metadata, r.HasChunk, r.Chunk = &metadata{}, false, nil
				bad = r.Metadata.decode(v)
			}
			return n
		case 2:
			n := bytesField(typ, b, &v)
			if n >= 0 {
				r.Metadata, r.HasChunk = nil, true
				bad = fields(v, func(num protowire.Number, typ protowire.Type, b []byte) int {
					if num == 1 {
						return bytesField(typ, b, &r.Chunk)
					}
					return -1
				})
			}
			return n
		}
		return -1
	})
	if err != nil {
		return err
	}
	return bad
}

func (r *streamRequest) appendTo(b []byte) []byte {
	if r.Metadata != nil {
		return appendMessage(b, 1, r.Metadata.appendTo)
	}
	return appendMessage(b, 2, func(b []byte) []byte {
		if len(r.Chunk) == 0 {
			return b
		}
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		return protowire.AppendBytes(b, r.Chunk)
	})
}

func (r *manifestResponse) appendTo(b []byte) []byte {
	// Sized once: the manifests can be tens of MiB.
	n := len(b) + protowire.SizeTag(2) + protowire.SizeBytes(len(r.SourceType))
	for _, m := range r.Manifests {
		n += protowire.SizeTag(1) + protowire.SizeBytes(len(m))
	}
	b = slices.Grow(b, n-len(b))
	for _, m := range r.Manifests {
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendString(b, m)
	}
	return appendString(b, 2, r.SourceType)
}

func (r *manifestResponse) decode(b []byte) error {
	*r = manifestResponse{}
	return fields(b, func(num protowire.Number, typ protowire.Type, b []byte) int {
		switch num {
		case 1:
			var s string
			n := stringField(typ, b, &s)
			if n >= 0 {
				r.Manifests = append(r.Manifests, s)
			}
			return n
		case 2:
			return stringField(typ, b, &r.SourceType)
		}
		return -1
	})
}

func (r *repositoryResponse) appendTo(b []byte) []byte {
	return appendBools(b, r.IsSupported, r.IsDiscoveryEnabled)
}

func (r *repositoryResponse) decode(b []byte) error {
	return decodeBools(b, &r.IsSupported, &r.IsDiscoveryEnabled)
}

func (r *pluginConfigResponse) appendTo(b []byte) []byte {
	return appendBools(b, r.IsDiscoveryConfigured, r.ProvideGitCreds)
}

func (r *pluginConfigResponse) decode(b []byte) error {
	return decodeBools(b, &r.IsDiscoveryConfigured, &r.ProvideGitCreds)
}

// appendBools and decodeBools are the two messages of two bools (fields 1
// and 2).
func appendBools(b []byte, v1, v2 bool) []byte {
	return appendBool(appendBool(b, 1, v1), 2, v2)
}

func decodeBools(b []byte, v1, v2 *bool) error {
	*v1, *v2 = false, false
	return fields(b, func(num protowire.Number, typ protowire.Type, b []byte) int {
		switch num {
		case 1:
			return boolField(typ, b, v1)
		case 2:
			return boolField(typ, b, v2)
		}
		return -1
	})
}

func (a *announcement) appendTo(b []byte) []byte {
	b = appendString(b, 1, a.Name)
	b = appendString(b, 2, a.Title)
	b = appendString(b, 3, a.Tooltip)
	b = appendBool(b, 4, a.Required)
	b = appendString(b, 5, a.ItemType)
	b = appendString(b, 6, a.CollectionType)
	b = appendString(b, 7, a.String)
	for _, s := range a.Array {
		b = protowire.AppendTag(b, 8, protowire.BytesType)
		b = protowire.AppendString(b, s)
	}
	for _, k := range sortedKeys(a.Map) {
		// A map entry is a message of key (1) and value (2), each written
		// even when empty, as protobuf-go writes them.
		b = appendMessage(b, 9, func(b []byte) []byte {
			b = protowire.AppendTag(b, 1, protowire.BytesType)
			b = protowire.AppendString(b, k)
			b = protowire.AppendTag(b, 2, protowire.BytesType)
			return protowire.AppendString(b, a.Map[k])
		})
	}
	return b
}

func (a *announcement) decode(b []byte) error {
	return fields(b, func(num protowire.Number, typ protowire.Type, b []byte) int {
		switch num {
		case 1:
			return stringField(typ, b, &a.Name)
		case 2:
			return stringField(typ, b, &a.Title)
		case 3:
			return stringField(typ, b, &a.Tooltip)
		case 4:
			return boolField(typ, b, &a.Required)
		case 5:
			return stringField(typ, b, &a.ItemType)
		case 6:
			return stringField(typ, b, &a.CollectionType)
		case 7:
			return stringField(typ, b, &a.String)
		case 8:
			var s string
			n := stringField(typ, b, &s)
			if n >= 0 {
				a.Array = append(a.Array, s)
			}
			return n
		case 9:
			var v []byte
			n := bytesField(typ, b, &v)
			if n >= 0 {
				var k, val string
				if fields(v, func(num protowire.Number, typ protowire.Type, b []byte) int {
					switch num {
					case 1:
						return stringField(typ, b, &k)
					case 2:
						return stringField(typ, b, &val)
					}
					return -1
				}) != nil {
					return -1
				}
				if a.Map == nil {
					a.Map = map[string]string{}
				}
				a.Map[k] = val
			}
			return n
		}
		return -1
	})
}

func (r *parametersResponse) appendTo(b []byte) []byte {
	for i := range r.Announcements {
		b = appendMessage(b, 1, r.Announcements[i].appendTo)
	}
	return b
}

func (r *parametersResponse) decode(b []byte) error {
	*r = parametersResponse{}
	return fields(b, func(num protowire.Number, typ protowire.Type, b []byte) int {
		var v []byte
		if num != 1 {
			return -1
		}
		n := bytesField(typ, b, &v)
		if n >= 0 {
			var a announcement
			if a.decode(v) != nil {
				return -1
			}
			r.Announcements = append(r.Announcements, a)
		}
		return n
	})
}

func (empty) appendTo(b []byte) []byte { return b }
func (*empty) decode([]byte) error     { return nil }

// codec is the gRPC codec of these messages, registered under "proto" for
// the server and the client it makes (the wire format is protobuf's).
type codec struct{}

type encoder interface{ appendTo([]byte) []byte }
type decoder interface{ decode([]byte) error }

func (codec) Name() string { return "proto" }

func (codec) Marshal(v any) ([]byte, error) {
	m, ok := v.(encoder)
	if !ok {
		return nil, fmt.Errorf("cmpservice: cannot encode %T", v)
	}
	return m.appendTo(nil), nil
}

func (codec) Unmarshal(b []byte, v any) error {
	m, ok := v.(decoder)
	if !ok {
		return fmt.Errorf("cmpservice: cannot decode into %T", v)
	}
	return m.decode(b)
}
