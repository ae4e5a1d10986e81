package ocm_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/yamlfile"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/fixtures"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// FuzzDecodeDescriptor feeds arbitrary bytes to the descriptor decoder. It
// must never panic; what it refuses wraps ErrInvalidDescriptor (too large or
// too dense also ErrLimitExceeded); what it accepts is a valid component
// version: a component name and version, a known schema, resources with
// names, access types and distinct identities, a local resource's version
// defaulted, and Raw the input. Accepted descriptors decode again to the
// same thing (the decoder is a function of the bytes).
//
// Seeds: every descriptor the OCM CLI wrote (testdata/ocm-cli),
// the committed corpus in testdata/fuzz/FuzzDecodeDescriptor, and a few
// hostile shapes.
func FuzzDecodeDescriptor(f *testing.F) {
	ents, _ := filepath.Glob(filepath.Join(fixtures.Dir(f), "descriptors", "*.yaml"))
	if len(ents) == 0 {
		f.Fatalf("no OCM CLI descriptors in %s", fixtures.Dir(f))
	}
	for _, p := range ents {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		"meta: {schemaVersion: v2}\ncomponent: {name: example.com/a/b, version: 1.0.0, provider: acme.org, resources: [{name: r, type: helmChart, relation: local, access: {type: localBlob, localReference: 'sha256:00', mediaType: x}}]}\n",
		`{"apiVersion":"ocm.software/v3alpha1","kind":"ComponentVersion","metadata":{"name":"example.com/a/b","version":"1.0.0","provider":{"name":"p"}},"spec":{"resources":[{"name":"r","type":"t","relation":"external","access":{"type":"none"}}],"references":[{"name":"x","componentName":"example.com/x/y","version":"1"}]}}`,
		"meta: {schemaVersion: v2}\ncomponent: {name: example.com/a/b, version: 1.0.0, provider: '{\"name\":\"p\",\"labels\":[{\"name\":\"l\",\"value\":{}}]}'}\n",
		"meta: {schemaVersion: v2}\napiVersion: ocm.software/v3alpha1\n",
		"a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n",
		strings.Repeat("[", 64) + strings.Repeat("]", 64),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ocm.DecodeDescriptor(data)
		if err != nil {
			if d != nil {
				t.Fatal("descriptor returned with an error")
			}
			if !errors.Is(err, errdef.ErrInvalidDescriptor) {
				t.Fatalf("error does not wrap ErrInvalidDescriptor: %v", err)
			}
			if (len(data) > ocm.MaxDescriptorSize || yamlfile.StructureCount(data) > ocm.MaxDescriptorNodes) && !errors.Is(err, errdef.ErrLimitExceeded) {
				t.Fatalf("oversized input refused without ErrLimitExceeded: %v", err)
			}
			return
		}
		if len(data) > ocm.MaxDescriptorSize || yamlfile.StructureCount(data) > ocm.MaxDescriptorNodes {
			t.Fatalf("accepted %d bytes, %d structural characters", len(data), yamlfile.StructureCount(data))
		}
		if string(d.Raw) != string(data) {
			t.Fatal("Raw is not the input")
		}
		if d.SchemaVersion != ocm.SchemaV2 && d.SchemaVersion != ocm.SchemaV3Alpha1 {
			t.Fatalf("schema %q", d.SchemaVersion)
		}
		if !ocm.ValidComponentName(d.Name) || d.Version == "" {
			t.Fatalf("accepted name %q version %q", d.Name, d.Version)
		}
		seen := map[string]bool{}
		for i := range d.Resources {
			r := &d.Resources[i]
			if r.Name == "" || r.Access.Type == "" {
				t.Fatalf("resource %d: name %q access type %q", i, r.Name, r.Access.Type)
			}
			if r.Relation != "external" && r.Version == "" {
				t.Fatalf("local resource %s without a version", r.Name)
			}
			key := r.Identity().String() + "@" + r.Version
			if seen[key] {
				t.Fatalf("resource %s twice", key)
			}
			seen[key] = true
			// Selecting a resource by its full identity finds it (or reports ambiguity).
			sel := r.Identity()
			if r.Version != "" {
				if _, extra := r.ExtraIdentity["version"]; !extra {
					sel["version"] = r.Version
				}
			}
			if got, err := d.Resource(sel); err == nil && got.Identity().String() != r.Identity().String() {
				t.Fatalf("selecting %s found %s", sel, got.Identity())
			} else if err != nil && !errors.Is(err, errdef.ErrInvalidInput) {
				t.Fatalf("selecting %s: %v", sel, err)
			}
			if _, err := json.Marshal(r.Access); err != nil {
				t.Fatalf("access of %s does not marshal: %v", r.Name, err)
			}
		}
		for i, ref := range d.References {
			if ref.Name == "" || ref.ComponentName == "" || ref.Version == "" {
				t.Fatalf("reference %d incomplete: %+v", i, ref)
			}
		}
		again, err := ocm.DecodeDescriptor(data)
		if err != nil {
			t.Fatalf("second decode: %v", err)
		}
		a, _ := json.Marshal(d)
		b, _ := json.Marshal(again)
		if string(a) != string(b) {
			t.Fatalf("decoding is not deterministic:\n%s\n%s", a, b)
		}
	})
}
