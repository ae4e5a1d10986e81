package signing

import (
	"bytes"
	"crypto"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"reflect"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/nesting"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// Normalisation algorithms of component descriptors.
const (
	// JSONNormalisationV1 is the legacy "entry" form (arrays of single-key
	// objects); only for descriptors in schema v2.
	JSONNormalisationV1 = "jsonNormalisation/v1"
	// JSONNormalisationV2 is V3 plus a legacy rule that adds the version to
	// the extra identity of resources whose identity is otherwise ambiguous.
	JSONNormalisationV2 = "jsonNormalisation/v2"
	// JSONNormalisationV3 is what the OCM CLI signs with by default.
	JSONNormalisationV3 = "jsonNormalisation/v3"
	// JSONNormalisationV4Alpha1 is the name the next-generation OCM bindings
	// use; its bytes are identical to V3.
	JSONNormalisationV4Alpha1 = "jsonNormalisation/v4alpha1"
)

// Hash algorithm names used in OCM digests.
const (
	SHA256 = "SHA-256"
	SHA512 = "SHA-512"
)

// Normalise returns the bytes of d that a signature or a reference digest
// covers, for the given normalisation algorithm.
//
// It reads only d.Raw: the document is decoded again into generic maps so that
// fields this package does not know (added by newer writers, such as
// referenceHints) are kept exactly as written and stay covered by the digest,
// instead of silently vanishing as they would through typed structs. This is
// also where it may differ from the OCM library, which marshals its own Go
// types: a field that the signer's OCM version did not know is dropped there
// and kept here, so such a signature fails here (fail closed). Known fields
// follow OCM's rules: empty optional fields are omitted, missing required ones
// are written as "", creationTime is rewritten in UTC, whole seconds.
//
// jsonNormalisation/v1 is supported for schema v2 descriptors only (for
// v3alpha1 OCM used a different, schema-specific form that no signed data
// in the wild is known to use).
func Normalise(d *ocm.Descriptor, algorithm string) ([]byte, error) {
	return normalise(d, algorithm, false)
}

// normalise implements Normalise. legacyV1 selects the jsonNormalisation/v1
// flavour of the tools before the OCM library (gardener component-cli), which
// omitted an empty extraIdentity where the OCM library writes null; it is only
// tried when verifying, see digestsFor.
func normalise(d *ocm.Descriptor, algorithm string, legacyV1 bool) ([]byte, error) {
	if d == nil {
		return nil, fmt.Errorf("%w: nil descriptor", errdef.ErrInvalidInput)
	}
	switch algorithm {
	case JSONNormalisationV3, JSONNormalisationV4Alpha1, JSONNormalisationV2, JSONNormalisationV1:
	default:
		return nil, fmt.Errorf("%w: normalisation algorithm %s is not supported (supported: %s, %s, %s, %s)",
			errdef.ErrInvalidInput, errdef.Quote(algorithm), JSONNormalisationV3, JSONNormalisationV4Alpha1, JSONNormalisationV2, JSONNormalisationV1)
	}
	doc, err := decodeRaw(d)
	if err != nil {
		return nil, err
	}
	comp, schema, err := v2Component(doc)
	if err != nil {
		return nil, fmt.Errorf("component %s:%s: %w", d.Name, d.Version, err)
	}
	if algorithm == JSONNormalisationV1 || algorithm == JSONNormalisationV2 {
		if err := defaultVersionIntoExtraIdentity(comp["resources"]); err != nil {
			return nil, fmt.Errorf("component %s:%s: %w", d.Name, d.Version, err)
		}
	}
	if algorithm == JSONNormalisationV1 {
		if schema != ocm.SchemaV2 {
			return nil, fmt.Errorf("%w: %s is only supported for schema v2 descriptors, component %s:%s is %s",
				errdef.ErrInvalidInput, JSONNormalisationV1, d.Name, d.Version, schema)
		}
		m, err := normaliseV1(comp, !legacyV1)
		if err != nil {
			return nil, fmt.Errorf("component %s:%s: %w", d.Name, d.Version, err)
		}
		return appendEntries(nil, m)
	}
	m, err := normaliseV3(comp)
	if err != nil {
		return nil, fmt.Errorf("component %s:%s: %w", d.Name, d.Version, err)
	}
	return appendCanonical(nil, m)
}

// Digest returns the lower-case hex digest of d normalised with normAlg and
// hashed with hashAlg (SHA-256 or SHA-512; the legacy spellings sha256 and
// sha512 are accepted).
func Digest(d *ocm.Descriptor, normAlg, hashAlg string) (string, error) {
	ds, err := digestsFor(d, normAlg, hashAlg, false)
	if err != nil {
		return "", err
	}
	return ds[0], nil
}

// digestsFor returns the digest of d, and with legacy set for
// jsonNormalisation/v1 also the digest of the older v1 flavour: both were
// written by real tools, and both cover the same descriptor content.
func digestsFor(d *ocm.Descriptor, normAlg, hashAlg string, legacy bool) ([]string, error) {
	h, err := newHash(hashAlg)
	if err != nil {
		return nil, err
	}
	flavours := []bool{false}
	if legacy && normAlg == JSONNormalisationV1 {
		flavours = append(flavours, true)
	}
	var out []string
	for _, f := range flavours {
		b, err := normalise(d, normAlg, f)
		if err != nil {
			return nil, err
		}
		h.Reset()
		h.Write(b)
		out = append(out, hex.EncodeToString(h.Sum(nil)))
	}
	return out, nil
}

// hashFor maps an OCM hash algorithm name to crypto.Hash.
func hashFor(name string) (crypto.Hash, error) {
	switch {
	case strings.EqualFold(name, SHA256), strings.EqualFold(name, "sha256"):
		return crypto.SHA256, nil
	case strings.EqualFold(name, SHA512), strings.EqualFold(name, "sha512"):
		return crypto.SHA512, nil
	}
	return 0, fmt.Errorf("%w: hash algorithm %s is not supported (supported: %s, %s)", errdef.ErrInvalidInput, errdef.Quote(name), SHA256, SHA512)
}

func newHash(name string) (hash.Hash, error) {
	h, err := hashFor(name)
	if err != nil {
		return nil, err
	}
	if h == crypto.SHA512 {
		return sha512.New(), nil
	}
	return sha256.New(), nil
}

// decodeRaw decodes d.Raw (YAML or JSON) into generic values, numbers kept as
// json.Number so that nothing is rounded before the canonicaliser sees it.
func decodeRaw(d *ocm.Descriptor) (map[string]any, error) {
	if len(d.Raw) == 0 {
		return nil, fmt.Errorf("%w: component %s:%s has no raw descriptor bytes to normalise (decode it with ocm.DecodeDescriptor)",
			errdef.ErrInvalidInput, d.Name, d.Version)
	}
	if len(d.Raw) > ocm.MaxDescriptorSize {
		return nil, fmt.Errorf("%w: descriptor is %d bytes: %w", errdef.ErrInvalidDescriptor, len(d.Raw), errdef.ErrLimitExceeded)
	}
	js, err := yaml.YAMLToJSON(d.Raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errdef.ErrInvalidDescriptor, err)
	}
	if err := nesting.CheckText(js); err != nil {
		return nil, fmt.Errorf("%w: descriptor %w", errdef.ErrInvalidDescriptor, err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%w: %v", errdef.ErrInvalidDescriptor, err)
	}
	if doc == nil {
		return nil, fmt.Errorf("%w: descriptor is not an object", errdef.ErrInvalidDescriptor)
	}
	return doc, nil
}

// v2Component returns the component in the v2 shape for either schema. The
// maps are fresh copies, so the caller may change them.
func v2Component(doc map[string]any) (map[string]any, string, error) {
	if api, ok := doc["apiVersion"]; ok && api != nil && api != "" {
		md, err := object(doc["metadata"], "metadata")
		if err != nil {
			return nil, "", err
		}
		spec, err := object(doc["spec"], "spec")
		if err != nil {
			return nil, "", err
		}
		comp := map[string]any{}
		for _, k := range []string{"name", "version", "labels", "provider", "creationTime"} {
			if v, ok := md[k]; ok {
				comp[k] = v
			}
		}
		for from, to := range map[string]string{"resources": "resources", "sources": "sources", "references": "componentReferences"} {
			if v, ok := spec[from]; ok {
				comp[to] = v
			}
		}
		return comp, ocm.SchemaV3Alpha1, nil
	}
	c, err := object(doc["component"], "component")
	if err != nil {
		return nil, "", err
	}
	comp := make(map[string]any, len(c))
	for k, v := range c {
		comp[k] = v
	}
	return comp, ocm.SchemaV2, nil
}

// object returns v as an object; nil becomes an empty one.
func object(v any, what string) (map[string]any, error) {
	switch t := v.(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		return t, nil
	}
	return nil, fmt.Errorf("%w: %s is a %s, want an object", errdef.ErrInvalidDescriptor, what, kind(v))
}

// list returns v as a list; nil becomes an empty one (OCM writes [] for it).
func list(v any, what string) ([]any, error) {
	switch t := v.(type) {
	case nil:
		return []any{}, nil
	case []any:
		return t, nil
	}
	return nil, fmt.Errorf("%w: %s is a %s, want a list", errdef.ErrInvalidDescriptor, what, kind(v))
}

func kind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "list"
	case string:
		return "string"
	case json.Number:
		return "number"
	case bool:
		return "boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// isEmpty reports whether Go's omitempty would drop the field: null, "", an
// empty list or object, false.
func isEmpty(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case string:
		return t == ""
	case bool:
		return !t
	case []any:
		return len(t) == 0
	case map[string]any:
		return len(t) == 0
	}
	return false
}

// normaliseV3 builds the jsonNormalisation/v3 model (also v2 and v4alpha1).
func normaliseV3(comp map[string]any) (map[string]any, error) {
	out := map[string]any{}
	for k, v := range comp {
		switch k {
		case "repositoryContexts", "resources", "sources", "componentReferences":
		case "labels":
			if err := setSigningLabels(out, v, "component labels"); err != nil {
				return nil, err
			}
		case "provider":
			p, err := provider(v)
			if err != nil {
				return nil, err
			}
			np := map[string]any{}
			for pk, pv := range p {
				if pk == "labels" {
					if err := setSigningLabels(np, pv, "provider labels"); err != nil {
						return nil, err
					}
					continue
				}
				np[pk] = pv
			}
			out[k] = np
		case "creationTime":
			if v == nil {
				continue
			}
			t, err := creationTime(v)
			if err != nil {
				return nil, err
			}
			out[k] = t
		default:
			out[k] = v
		}
	}
	setDefault(out, "", "name", "version")
	if _, ok := out["provider"]; !ok {
		out["provider"] = map[string]any{"name": ""}
	}
	var err error
	if out["resources"], err = mapElements(comp["resources"], "resources", resourceV3); err != nil {
		return nil, err
	}
	if out["sources"], err = mapElements(comp["sources"], "sources", sourceV3); err != nil {
		return nil, err
	}
	if out["componentReferences"], err = mapElements(comp["componentReferences"], "componentReferences", referenceV3); err != nil {
		return nil, err
	}
	return map[string]any{"component": out}, nil
}

func resourceV3(m map[string]any) (map[string]any, error) {
	out := map[string]any{}
	for k, v := range m {
		switch k {
		case "access", "srcRefs", "srcRef":
		case "labels":
			if err := setSigningLabels(out, v, "resource labels"); err != nil {
				return nil, err
			}
		case "extraIdentity", "relation", "referenceHints", "digest":
			if !isEmpty(v) {
				out[k] = v
			}
		default:
			out[k] = v
		}
	}
	setDefault(out, "", "name", "version", "type")
	if noneAccess(m["access"]) {
		delete(out, "digest")
	}
	return out, nil
}

func sourceV3(m map[string]any) (map[string]any, error) {
	out := map[string]any{}
	for k, v := range m {
		switch k {
		case "access":
		case "labels":
			if err := setSigningLabels(out, v, "source labels"); err != nil {
				return nil, err
			}
		case "extraIdentity", "referenceHints":
			if !isEmpty(v) {
				out[k] = v
			}
		default:
			out[k] = v
		}
	}
	setDefault(out, "", "name", "version", "type")
	return out, nil
}

// referenceV3 keeps a component reference complete: OCM's v3 exclusion rules
// name the internal field "references", which never matches the serialised
// "componentReferences", so non-signing labels and the digest are signed too.
func referenceV3(m map[string]any) (map[string]any, error) {
	out := map[string]any{}
	for k, v := range m {
		switch k {
		case "labels":
			if isEmpty(v) {
				continue
			}
			ls, err := list(v, "reference labels")
			if err != nil {
				return nil, err
			}
			nl := make([]any, 0, len(ls))
			for _, l := range ls {
				lm, err := object(l, "reference label")
				if err != nil {
					return nil, err
				}
				nl = append(nl, labelStruct(lm))
			}
			out[k] = nl
		case "extraIdentity", "digest":
			if !isEmpty(v) {
				out[k] = v
			}
		default:
			out[k] = v
		}
	}
	setDefault(out, "", "name", "version", "componentName")
	return out, nil
}

// labelStruct writes a label as OCM's Label type marshals it: name always,
// the optional fields only when set, signing as a boolean.
func labelStruct(l map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range l {
		switch k {
		case "signing":
			if isSigning(v) {
				out[k] = true
			}
		case "version", "digest", "access", "merge":
			if !isEmpty(v) {
				out[k] = v
			}
		default:
			out[k] = v
		}
	}
	setDefault(out, "", "name")
	return out
}

// isSigning reports whether a label's signing flag is set (true or "true").
func isSigning(v any) bool { return v == true || v == "true" }

// setSigningLabels sets out["labels"] to the signing labels of v, each reduced
// to name, version, value and signing; nothing when none remain.
func setSigningLabels(out map[string]any, v any, what string) error {
	ls, err := list(v, what)
	if err != nil {
		return err
	}
	var kept []any
	for _, l := range ls {
		lm, err := object(l, "label")
		if err != nil {
			return err
		}
		if !isSigning(lm["signing"]) {
			continue
		}
		nl := map[string]any{"name": lm["name"], "signing": true}
		if nl["name"] == nil {
			nl["name"] = ""
		}
		if val, ok := lm["value"]; ok {
			nl["value"] = val
		}
		if ver := lm["version"]; !isEmpty(ver) {
			nl["version"] = ver
		}
		kept = append(kept, nl)
	}
	if len(kept) > 0 {
		out["labels"] = kept
	}
	return nil
}

func setDefault(m map[string]any, def any, keys ...string) {
	for _, k := range keys {
		if m[k] == nil {
			m[k] = def
		}
	}
}

func mapElements(v any, what string, f func(map[string]any) (map[string]any, error)) ([]any, error) {
	ls, err := list(v, what)
	if err != nil {
		return nil, err
	}
	out := make([]any, 0, len(ls))
	for i, e := range ls {
		m, err := object(e, fmt.Sprintf("%s[%d]", what, i))
		if err != nil {
			return nil, err
		}
		n, err := f(m)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", what, i, err)
		}
		out = append(out, n)
	}
	return out, nil
}

// noneAccess reports whether an access is of type none. Like OCM, only the
// exact spellings "none" and "None" count.
func noneAccess(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	t, _ := m["type"].(string)
	return t == "none" || t == "None"
}

// provider returns the provider as an object: v3alpha1 has one; v2 has a
// string that is either the name or a JSON-encoded object (when the provider
// has labels).
func provider(v any) (map[string]any, error) {
	switch t := v.(type) {
	case nil:
		return map[string]any{"name": ""}, nil
	case map[string]any:
		p := make(map[string]any, len(t))
		for k, v := range t {
			p[k] = v
		}
		setDefault(p, "", "name")
		return p, nil
	case string:
		if strings.HasPrefix(strings.TrimSpace(t), "{") {
			dec := json.NewDecoder(strings.NewReader(t))
			dec.UseNumber()
			var p map[string]any
			if err := dec.Decode(&p); err != nil || dec.More() {
				return nil, fmt.Errorf("%w: provider %s is neither a name nor a JSON object", errdef.ErrInvalidDescriptor, errdef.Quote(t))
			}
			return provider(p)
		}
		return map[string]any{"name": t}, nil
	}
	return nil, fmt.Errorf("%w: provider is a %s", errdef.ErrInvalidDescriptor, kind(v))
}

// creationTime rewrites an RFC 3339 time as OCM's Timestamp does: UTC,
// rounded to the second.
func creationTime(v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%w: creationTime is a %s, want an RFC 3339 string", errdef.ErrInvalidDescriptor, kind(v))
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return "", fmt.Errorf("%w: creationTime: %v", errdef.ErrInvalidDescriptor, err)
	}
	t = t.UTC().Round(time.Second)
	if y := t.Year(); y < 0 || y >= 10000 {
		return "", fmt.Errorf("%w: creationTime %s is outside the years 0..9999", errdef.ErrInvalidDescriptor, errdef.Quote(s))
	}
	return t.Format(time.RFC3339), nil
}

// defaultVersionIntoExtraIdentity is the legacy rule of jsonNormalisation/v1
// and v2: a resource whose name and extra identity equal another resource's
// gets its version added to its extra identity. Checked in order against the
// already updated entries, so the last of a group stays unchanged, as in OCM.
func defaultVersionIntoExtraIdentity(v any) error {
	rs, err := list(v, "resources")
	if err != nil {
		return err
	}
	ms := make([]map[string]any, len(rs))
	for i, r := range rs {
		m, err := object(r, fmt.Sprintf("resources[%d]", i))
		if err != nil {
			return err
		}
		ms[i] = m
	}
	eid := func(m map[string]any) map[string]any {
		out := map[string]any{}
		if e, ok := m["extraIdentity"].(map[string]any); ok {
			for k, v := range e {
				out[k] = v
			}
		}
		return out
	}
	for i := range ms {
		for j := range ms {
			if i == j || !reflect.DeepEqual(ms[i]["name"], ms[j]["name"]) {
				continue
			}
			id := eid(ms[i])
			if !reflect.DeepEqual(eid(ms[j]), id) {
				continue
			}
			ver := ms[i]["version"]
			if ver == nil {
				ver = ""
			}
			id["version"] = ver
			ms[i]["extraIdentity"] = id
			break
		}
	}
	return nil
}

// normaliseV1 builds the jsonNormalisation/v1 model of a schema v2 descriptor:
// the v2 document with meta, the provider as a string unless it has labels,
// sources and repository contexts dropped, signing-label filtering on
// references too, an empty extraIdentity written as null (nullIdentity, the
// OCM library) or left out (older tools).
func normaliseV1(comp map[string]any, nullIdentity bool) (map[string]any, error) {
	out := map[string]any{}
	for k, v := range comp {
		switch k {
		case "repositoryContexts", "sources", "resources", "componentReferences":
		case "labels":
			if err := setSigningLabels(out, v, "component labels"); err != nil {
				return nil, err
			}
		case "provider":
			p, err := provider(v)
			if err != nil {
				return nil, err
			}
			if isEmpty(p["labels"]) {
				out[k] = p["name"]
				continue
			}
			np := map[string]any{"name": p["name"]}
			if err := setSigningLabels(np, p["labels"], "provider labels"); err != nil {
				return nil, err
			}
			out[k] = np
		case "creationTime":
			if v == nil {
				continue
			}
			t, err := creationTime(v)
			if err != nil {
				return nil, err
			}
			out[k] = t
		default:
			out[k] = v
		}
	}
	setDefault(out, "", "name", "version", "provider")
	var err error
	if out["resources"], err = mapElements(comp["resources"], "resources", resourceV3); err != nil {
		return nil, err
	}
	if out["componentReferences"], err = mapElements(comp["componentReferences"], "componentReferences", referenceV1); err != nil {
		return nil, err
	}
	if nullIdentity {
		for _, k := range []string{"resources", "componentReferences"} {
			for _, e := range out[k].([]any) {
				if m := e.(map[string]any); m["extraIdentity"] == nil {
					m["extraIdentity"] = nil
				}
			}
		}
	}
	return map[string]any{"component": out, "meta": map[string]any{"schemaVersion": ocm.SchemaV2}}, nil
}

func referenceV1(m map[string]any) (map[string]any, error) {
	out := map[string]any{}
	for k, v := range m {
		switch k {
		case "labels":
			if err := setSigningLabels(out, v, "reference labels"); err != nil {
				return nil, err
			}
		case "digest":
			if !isEmpty(v) {
				out[k] = v
			}
		case "extraIdentity":
			if !isEmpty(v) {
				out[k] = v
			}
		default:
			out[k] = v
		}
	}
	setDefault(out, "", "name", "version", "componentName")
	return out, nil
}
