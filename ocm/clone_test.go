package ocm_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// fullDescriptor sets every field of a Descriptor, at every level (checked
// by TestCloneSharesNothing): a field added to the types must be added here.
func fullDescriptor() *ocm.Descriptor {
	label := func(n string) ocm.Label {
		return ocm.Label{Name: n, Value: json.RawMessage(`{"a":[1,"x"]}`), Version: "v1", Signing: true}
	}
	meta := func(n string) ocm.ElementMeta {
		return ocm.ElementMeta{Name: n, Version: "1.0.0", ExtraIdentity: map[string]string{"k": "v"}, Labels: []ocm.Label{label(n)}}
	}
	access := func() ocm.Access {
		return ocm.Access{Type: "localBlob", Fields: map[string]any{
			"type": "localBlob", "localReference": "sha256:00",
			"globalAccess": map[string]any{"type": "ociArtifact", "list": []any{"a", map[string]any{"b": 1.0}}},
		}}
	}
	dg := func() *ocm.Digest {
		return &ocm.Digest{HashAlgorithm: "SHA-256", NormalisationAlgorithm: "jsonNormalisation/v1", Value: "00"}
	}
	return &ocm.Descriptor{
		SchemaVersion:      ocm.SchemaV2,
		Name:               "example.com/a/b",
		Version:            "1.0.0",
		CreationTime:       "2026-01-01T00:00:00Z",
		Provider:           ocm.Provider{Name: "acme", Labels: []ocm.Label{label("p")}},
		Labels:             []ocm.Label{label("c")},
		RepositoryContexts: []json.RawMessage{json.RawMessage(`{"type":"OCIRegistry"}`)},
		Resources: []ocm.Resource{{
			ElementMeta: meta("r"), Type: "helmChart", Relation: "local",
			SrcRefs: json.RawMessage(`[{"identitySelector":{"name":"s"}}]`), Access: access(), Digest: dg(),
		}},
		Sources:    []ocm.Source{{ElementMeta: meta("s"), Type: "git", Access: access()}},
		References: []ocm.Reference{{ElementMeta: meta("ref"), ComponentName: "example.com/x/y", Digest: dg()}},
		Signatures: []ocm.Signature{{Name: "sig", Digest: *dg(), Signature: ocm.SignatureSpec{
			Algorithm: "RSASSA-PSS", Value: "00", MediaType: "application/vnd.ocm.signature.rsa", Issuer: "me"}}},
		NestedDigests: json.RawMessage(`[{"name":"n"}]`),
		Raw:           []byte("meta: {schemaVersion: v2}\n"),
	}
}

// Clone is a deep copy: equal, every field set in the fixture, and no
// slice, map or pointer of the copy reaches memory of the original. Kept
// descriptors are handed out as clones (ocimapping.Descriptors), so this
// is what keeps one generation's change to its descriptor from reaching
// another's.
func TestCloneSharesNothing(t *testing.T) {
	d := fullDescriptor()
	allSet(t, reflect.ValueOf(*d), "Descriptor")
	c := d.Clone()
	if !reflect.DeepEqual(c, d) {
		t.Fatalf("clone differs:\n%+v\n%+v", c, d)
	}
	sharesNothing(t, reflect.ValueOf(c).Elem(), reflect.ValueOf(d).Elem(), "Descriptor")

	// And by what a caller would do.
	c.Resources[0].Access.Fields["globalAccess"].(map[string]any)["list"].([]any)[0] = "changed"
	c.Resources[0].ExtraIdentity["k"] = "changed"
	c.Labels[0].Value[0] = '['
	c.Raw[0] = 'X'
	c.Resources[0].Digest.Value = "changed"
	if !reflect.DeepEqual(d, fullDescriptor()) {
		t.Fatal("a change to the clone reached the original")
	}
	if (*ocm.Descriptor)(nil).Clone() != nil {
		t.Fatal("a nil descriptor's clone is not nil")
	}
}

// allSet fails for a zero field anywhere in v (slices and maps: in their
// elements as well), so that the fixture covers every field.
func allSet(t *testing.T, v reflect.Value, path string) {
	t.Helper()
	if v.IsZero() {
		t.Errorf("%s is not set in the fixture: set it, and check that Clone copies it", path)
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			allSet(t, v.Field(i), path+"."+v.Type().Field(i).Name)
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.Uint8 {
			for i := range v.Len() {
				allSet(t, v.Index(i), path+"[]")
			}
		}
	case reflect.Pointer, reflect.Interface:
		allSet(t, v.Elem(), path)
	}
}

// sharesNothing fails where a and b (equal values) hold the same slice
// array, map or pointer.
func sharesNothing(t *testing.T, a, b reflect.Value, path string) {
	t.Helper()
	switch a.Kind() {
	case reflect.Struct:
		for i := range a.NumField() {
			sharesNothing(t, a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name)
		}
	case reflect.Slice:
		if a.Len() > 0 && a.Pointer() == b.Pointer() {
			t.Errorf("%s: the clone shares the slice", path)
		}
		if a.Type().Elem().Kind() != reflect.Uint8 {
			for i := range a.Len() {
				sharesNothing(t, a.Index(i), b.Index(i), path+"[]")
			}
		}
	case reflect.Map:
		if !a.IsNil() && a.Pointer() == b.Pointer() {
			t.Errorf("%s: the clone shares the map", path)
		}
		for _, k := range a.MapKeys() {
			sharesNothing(t, a.MapIndex(k), b.MapIndex(k), path+"["+k.String()+"]")
		}
	case reflect.Pointer:
		if !a.IsNil() && a.Pointer() == b.Pointer() {
			t.Errorf("%s: the clone shares the pointer", path)
		}
		if !a.IsNil() {
			sharesNothing(t, a.Elem(), b.Elem(), path)
		}
	case reflect.Interface:
		if !a.IsNil() {
			sharesNothing(t, a.Elem(), b.Elem(), path)
		}
	}
}
