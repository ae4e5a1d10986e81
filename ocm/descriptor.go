package ocm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/yamlfile"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/nesting"
)

// Schema versions a Descriptor can be decoded from.
const (
	SchemaV2        = "v2"
	SchemaV3Alpha1  = "ocm.software/v3alpha1"
	legacyV3Alpha1  = "ocm.gardener.cloud/v3alpha1"
	kindComponentV3 = "ComponentVersion"
)

// MaxDescriptorSize bounds the bytes a descriptor may have before it is decoded;
// real descriptors are a few KiB, a huge one is an attack on the YAML decoder.
const MaxDescriptorSize = 4 << 20

// MaxDescriptorNodes bounds the structure of a descriptor before it is
// decoded: the count of the characters that start or separate YAML/JSON nodes
// (see yamlfile.StructureCount), an over-estimate of its nodes. The YAML decoder needs
// some 180 bytes of heap per node, so the byte limit alone would let a 4 MiB
// flow list ("[0,0,0,…]") cost ~370 MiB and seconds of CPU; this bound keeps
// any descriptor under ~100 MiB. Real descriptors use 6–12 % of their bytes
// for these characters, so a real 4 MiB descriptor still fits.
const MaxDescriptorNodes = 1 << 19

// Descriptor is one component version, independent of its serialisation.
type Descriptor struct {
	SchemaVersion      string // SchemaV2 or SchemaV3Alpha1
	Name               string
	Version            string
	CreationTime       string
	Provider           Provider
	Labels             []Label
	RepositoryContexts []json.RawMessage
	Resources          []Resource
	Sources            []Source
	References         []Reference
	Signatures         []Signature
	NestedDigests      json.RawMessage

	// Raw is the document as it was read, for signature normalisation.
	Raw []byte `json:"-"`
}

// Provider of a component. In v2 it is serialised as a string, which holds JSON
// when the provider has labels.
type Provider struct {
	Name   string  `json:"name"`
	Labels []Label `json:"labels,omitempty"`
}

// Label is a name/value pair; Signing labels are part of the signed digest.
type Label struct {
	Name    string          `json:"name"`
	Value   json.RawMessage `json:"value"`
	Version string          `json:"version,omitempty"`
	Signing bool            `json:"signing,omitempty"`
}

// UnmarshalJSON accepts signing as a bool or the string "true" (old data).
func (l *Label) UnmarshalJSON(b []byte) error {
	var raw struct {
		Name    string          `json:"name"`
		Value   json.RawMessage `json:"value"`
		Version string          `json:"version,omitempty"`
		Signing json.RawMessage `json:"signing,omitempty"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	l.Name, l.Value, l.Version = raw.Name, raw.Value, raw.Version
	switch s := strings.TrimSpace(string(raw.Signing)); s {
	case "", "null", "false", `"false"`:
	case "true", `"true"`:
		l.Signing = true
	default:
		return fmt.Errorf("label %s: signing must be a boolean, got %s", errdef.Quote(raw.Name), s)
	}
	return nil
}

// ElementMeta is what resources, sources and references share.
type ElementMeta struct {
	Name          string            `json:"name"`
	Version       string            `json:"version,omitempty"`
	ExtraIdentity map[string]string `json:"extraIdentity,omitempty"`
	Labels        []Label           `json:"labels,omitempty"`
}

// Identity returns name + extraIdentity.
func (m ElementMeta) Identity() Identity {
	id := Identity{"name": m.Name}
	for k, v := range m.ExtraIdentity {
		id[k] = v
	}
	return id
}

// Label returns the label with the given name.
func (m ElementMeta) Label(name string) (Label, bool) { return findLabel(m.Labels, name) }

// Resource is a resource of a component version.
type Resource struct {
	ElementMeta
	Type     string          `json:"type"`
	Relation string          `json:"relation,omitempty"`
	SrcRefs  json.RawMessage `json:"srcRefs,omitempty"`
	Access   Access          `json:"access"`
	Digest   *Digest         `json:"digest,omitempty"`
}

// Source is a source of a component version (kept for completeness and signing).
type Source struct {
	ElementMeta
	Type   string `json:"type"`
	Access Access `json:"access"`
}

// Reference points at another component version.
type Reference struct {
	ElementMeta
	ComponentName string  `json:"componentName"`
	Digest        *Digest `json:"digest,omitempty"`
}

// Digest of a resource or a referenced component.
type Digest struct {
	HashAlgorithm          string `json:"hashAlgorithm"`
	NormalisationAlgorithm string `json:"normalisationAlgorithm"`
	Value                  string `json:"value"`
}

// Signature of a component version.
type Signature struct {
	Name      string        `json:"name"`
	Digest    Digest        `json:"digest"`
	Signature SignatureSpec `json:"signature"`
}

// SignatureSpec is the signature value and how it was made.
type SignatureSpec struct {
	Algorithm string `json:"algorithm"`
	Value     string `json:"value"`
	MediaType string `json:"mediaType"`
	Issuer    string `json:"issuer,omitempty"`
}

// Label returns the component label with the given name.
func (d *Descriptor) Label(name string) (Label, bool) { return findLabel(d.Labels, name) }

func findLabel(ls []Label, name string) (Label, bool) {
	for _, l := range ls {
		if l.Name == name {
			return l, true
		}
	}
	return Label{}, false
}

// wire formats -------------------------------------------------------------

type v2Document struct {
	Meta *struct {
		SchemaVersion string `json:"schemaVersion"`
	} `json:"meta"`
	APIVersion    string          `json:"apiVersion"`
	Kind          string          `json:"kind"`
	Component     *v2Component    `json:"component"`
	Metadata      *v3Metadata     `json:"metadata"`
	RepoContexts  json.RawMessage `json:"repositoryContexts"`
	Spec          *v3Spec         `json:"spec"`
	Signatures    []Signature     `json:"signatures"`
	NestedDigests json.RawMessage `json:"nestedDigests"`
}

type v2Component struct {
	Name               string            `json:"name"`
	Version            string            `json:"version"`
	CreationTime       string            `json:"creationTime"`
	Provider           json.RawMessage   `json:"provider"`
	Labels             []Label           `json:"labels"`
	RepositoryContexts []json.RawMessage `json:"repositoryContexts"`
	Sources            []Source          `json:"sources"`
	References         []Reference       `json:"componentReferences"`
	Resources          []Resource        `json:"resources"`
}

type v3Metadata struct {
	Name         string   `json:"name"`
	Version      string   `json:"version"`
	Labels       []Label  `json:"labels"`
	Provider     Provider `json:"provider"`
	CreationTime string   `json:"creationTime"`
}

type v3Spec struct {
	Resources  []Resource  `json:"resources"`
	Sources    []Source    `json:"sources"`
	References []Reference `json:"references"`
}

// DecodeDescriptor decodes a component descriptor in either serialisation (YAML
// or JSON) and validates what rendering relies on.
func DecodeDescriptor(data []byte) (*Descriptor, error) {
	if len(data) > MaxDescriptorSize {
		return nil, fmt.Errorf("%w: descriptor is %d bytes, more than the limit of %d: %w",
			errdef.ErrInvalidDescriptor, len(data), MaxDescriptorSize, errdef.ErrLimitExceeded)
	}
	if n := yamlfile.StructureCount(data); n > MaxDescriptorNodes {
		return nil, fmt.Errorf("%w: descriptor has %d structural characters (',' '[' '{' '-' ':' '?' newline), more than the limit of %d: %w",
			errdef.ErrInvalidDescriptor, n, MaxDescriptorNodes, errdef.ErrLimitExceeded)
	}
	js, plain := plainJSON(data)
	var err error
	if !plain {
		if js, err = yaml.YAMLToJSON(data); err != nil {
			return nil, fmt.Errorf("%w: %v", errdef.ErrInvalidDescriptor, err)
		}
	}
	if err := nesting.CheckText(js); err != nil {
		return nil, fmt.Errorf("%w: descriptor %w", errdef.ErrInvalidDescriptor, err)
	}
	var doc v2Document
	if err := json.Unmarshal(js, &doc); err != nil {
		return nil, fmt.Errorf("%w: %v", errdef.ErrInvalidDescriptor, err)
	}
	d := &Descriptor{Raw: data, Signatures: doc.Signatures, NestedDigests: doc.NestedDigests}
	hasV2 := doc.Meta != nil && doc.Meta.SchemaVersion != ""
	hasV3 := doc.APIVersion != ""
	switch {
	case hasV2 && hasV3:
		return nil, fmt.Errorf("%w: both meta.schemaVersion and apiVersion are set", errdef.ErrInvalidDescriptor)
	case hasV2:
		if doc.Meta.SchemaVersion != SchemaV2 {
			return nil, fmt.Errorf("%w: unsupported schema version %s", errdef.ErrInvalidDescriptor, errdef.Quote(doc.Meta.SchemaVersion))
		}
		if doc.Component == nil {
			return nil, fmt.Errorf("%w: schema v2 without a component", errdef.ErrInvalidDescriptor)
		}
		c := doc.Component
		d.SchemaVersion = SchemaV2
		d.Name, d.Version, d.CreationTime, d.Labels = c.Name, c.Version, c.CreationTime, c.Labels
		d.RepositoryContexts, d.Sources, d.References, d.Resources = c.RepositoryContexts, c.Sources, c.References, c.Resources
		if d.Provider, err = decodeV2Provider(c.Provider); err != nil {
			return nil, err
		}
	case hasV3:
		if doc.APIVersion != SchemaV3Alpha1 && doc.APIVersion != legacyV3Alpha1 {
			return nil, fmt.Errorf("%w: unsupported apiVersion %s", errdef.ErrInvalidDescriptor, errdef.Quote(doc.APIVersion))
		}
		if doc.Kind != kindComponentV3 {
			return nil, fmt.Errorf("%w: kind %s, want %s", errdef.ErrInvalidDescriptor, errdef.Quote(doc.Kind), kindComponentV3)
		}
		if doc.Metadata == nil {
			return nil, fmt.Errorf("%w: %s without metadata", errdef.ErrInvalidDescriptor, doc.APIVersion)
		}
		m := doc.Metadata
		d.SchemaVersion = SchemaV3Alpha1
		d.Name, d.Version, d.CreationTime, d.Labels, d.Provider = m.Name, m.Version, m.CreationTime, m.Labels, m.Provider
		if len(doc.RepoContexts) > 0 && string(doc.RepoContexts) != "null" {
			if err := json.Unmarshal(doc.RepoContexts, &d.RepositoryContexts); err != nil {
				return nil, fmt.Errorf("%w: repositoryContexts: %v", errdef.ErrInvalidDescriptor, err)
			}
		}
		if doc.Spec != nil {
			d.Resources, d.Sources, d.References = doc.Spec.Resources, doc.Spec.Sources, doc.Spec.References
		}
	default:
		return nil, fmt.Errorf("%w: neither meta.schemaVersion nor apiVersion is set", errdef.ErrInvalidDescriptor)
	}
	if err := d.validate(); err != nil {
		return nil, err
	}
	return d, nil
}

func decodeV2Provider(raw json.RawMessage) (Provider, error) {
	var p Provider
	if len(raw) == 0 || string(raw) == "null" {
		return p, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if strings.HasPrefix(strings.TrimSpace(s), "{") {
			if err := json.Unmarshal([]byte(s), &p); err != nil {
				return p, fmt.Errorf("%w: provider: %v", errdef.ErrInvalidDescriptor, err)
			}
			return p, nil
		}
		p.Name = s
		return p, nil
	}
	// Some writers put an object where v2 wants a string; accept it.
	if err := json.Unmarshal(raw, &p); err != nil {
		return p, fmt.Errorf("%w: provider: %v", errdef.ErrInvalidDescriptor, err)
	}
	return p, nil
}

var componentNameRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[a-z][-a-z0-9]*([.][a-z][-a-z0-9]*)*[.][a-z]{2,}(/[a-z][-a-z0-9_.]*)+$`)
})

// ValidComponentName reports whether name is a valid OCM component name (a DNS
// domain followed by a path).
func ValidComponentName(name string) bool {
	return len(name) <= 255 && componentNameRE().MatchString(name)
}

func (d *Descriptor) validate() error {
	if d.Name == "" {
		return fmt.Errorf("%w: component name is empty", errdef.ErrInvalidDescriptor)
	}
	if !ValidComponentName(d.Name) {
		return fmt.Errorf("%w: component name %s is not a domain followed by a path", errdef.ErrInvalidDescriptor, errdef.Quote(d.Name))
	}
	if d.Version == "" {
		return fmt.Errorf("%w: component %s has no version", errdef.ErrInvalidDescriptor, d.Name)
	}
	seen := map[string]bool{}
	for i := range d.Resources {
		r := &d.Resources[i]
		if r.Name == "" {
			return fmt.Errorf("%w: resource %d has no name", errdef.ErrInvalidDescriptor, i)
		}
		if r.Access.Type == "" {
			return fmt.Errorf("%w: resource %s has no access type", errdef.ErrInvalidDescriptor, r.Identity())
		}
		// A local resource without a version takes the component's version.
		if r.Version == "" && r.Relation != "external" {
			r.Version = d.Version
		}
		key := r.Identity().String() + "@" + r.Version
		if seen[key] {
			return fmt.Errorf("%w: resource %s appears twice", errdef.ErrInvalidDescriptor, r.Identity())
		}
		seen[key] = true
	}
	for i, ref := range d.References {
		if ref.Name == "" || ref.ComponentName == "" || ref.Version == "" {
			return fmt.Errorf("%w: component reference %d needs name, componentName and version", errdef.ErrInvalidDescriptor, i)
		}
	}
	return nil
}

// Identity of a resource, source or reference: name plus extra identity attributes.
type Identity map[string]string

// ParseIdentity parses "name" or "name,key=value,…" as used on the command line.
func ParseIdentity(s string) (Identity, error) {
	parts := strings.Split(s, ",")
	id := Identity{"name": strings.TrimSpace(parts[0])}
	if id["name"] == "" {
		return nil, fmt.Errorf("%w: resource identity %s has no name", errdef.ErrInvalidInput, errdef.Quote(s))
	}
	for _, p := range parts[1:] {
		k, v, ok := strings.Cut(p, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("%w: resource identity %s: %s is not key=value", errdef.ErrInvalidInput, errdef.Quote(s), errdef.Quote(p))
		}
		id[k] = strings.TrimSpace(v)
	}
	return id, nil
}

// String renders the identity as name or name[k=v,…] with sorted keys.
func (id Identity) String() string {
	keys := make([]string, 0, len(id))
	for k := range id {
		if k != "name" {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return id["name"]
	}
	sort.Strings(keys)
	var b bytes.Buffer
	b.WriteString(id["name"])
	b.WriteByte('[')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%s", k, id[k])
	}
	b.WriteByte(']')
	return b.String()
}

// Matches reports whether every attribute of sel is set to the same value in id.
// A selector that names only "name" matches any extra identity.
func (id Identity) Matches(sel Identity) bool {
	for k, v := range sel {
		if id[k] != v {
			return false
		}
	}
	return true
}

// SelectResources returns the resources whose identity matches sel. A "version"
// attribute in sel that is not part of the extra identity matches the resource version.
func (d *Descriptor) SelectResources(sel Identity) []*Resource {
	var out []*Resource
	for i := range d.Resources {
		r := &d.Resources[i]
		id := r.Identity()
		if _, ok := id["version"]; !ok && sel["version"] != "" {
			id["version"] = r.Version
		}
		if id.Matches(sel) {
			out = append(out, r)
		}
	}
	return out
}

// Resource returns the one resource matching sel, or a specific error.
func (d *Descriptor) Resource(sel Identity) (*Resource, error) {
	rs := d.SelectResources(sel)
	switch len(rs) {
	case 0:
		names := make([]string, 0, len(d.Resources))
		for _, r := range d.Resources {
			names = append(names, r.Identity().String())
		}
		return nil, fmt.Errorf("resource %s %w in component %s:%s (it has: %s)", errdef.Field(sel.String()), errdef.ErrNotFound, d.Name, d.Version, errdef.Cut(strings.Join(names, ", ")))
	case 1:
		return rs[0], nil
	default:
		return nil, fmt.Errorf("%w: resource %s is ambiguous in component %s:%s (%d match; add extra identity or version)", errdef.ErrInvalidInput, sel, d.Name, d.Version, len(rs))
	}
}
