package signing

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/fixtures"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// FuzzNormalise feeds arbitrary descriptor bytes through decoding and every
// normalisation. Whatever is accepted must normalise without panicking, and a
// jsonNormalisation/v3 result must be canonical (re-canonicalising it gives
// the same bytes), byte-identical to v4alpha1, and free of what the algorithm
// drops.
func FuzzNormalise(f *testing.F) {
	for _, p := range []string{
		"descriptors/ctf-signed__example.com_fixtures_signed-app_1.0.0.yaml",
		"descriptors/ctf-signed__example.com_fixtures_signed-bundle_1.0.0.yaml",
		"descriptors/ctf__example.com_fixtures_podinfo-app-v3_1.0.0.yaml",
		"descriptors/ctf__example.com_fixtures_podinfo-app_1.0.0.yaml",
		"upstream-testdata/normalisation-v3-conformance-ocmcli-0.27.0/input.yaml",
	} {
		b, err := os.ReadFile(filepath.Join(fixtures.Dir(f), p))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"meta":{"schemaVersion":"v2"},"component":{"name":"a.io/b","version":"1","provider":"{\"name\":\"p\",\"labels\":[{\"name\":\"l\",\"value\":1e400,\"signing\":true}]}"}}`))
	f.Add([]byte("meta: {schemaVersion: v2}\ncomponent: {name: a.io/b, version: '1', provider: p, creationTime: '2024-01-01T00:00:00.5Z', labels: [{name: x, value: {\"\\u2028\": [0.1, -0, 1e21]}, signing: \"true\"}]}\n"))

	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ocm.DecodeDescriptor(data)
		if err != nil {
			return
		}
		for _, alg := range []string{JSONNormalisationV1, JSONNormalisationV2} {
			_, _ = Normalise(d, alg)
		}
		b, err := Normalise(d, JSONNormalisationV3)
		if err != nil {
			return
		}
		b4, err := Normalise(d, JSONNormalisationV4Alpha1)
		if err != nil || !bytes.Equal(b, b4) {
			t.Fatalf("v4alpha1 differs from v3: %v", err)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var v map[string]any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("normalised bytes are not JSON: %v\n%s", err, b)
		}
		again, err := appendCanonical(nil, v)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("not canonical (err %v):\n%s\n%s", err, b, again)
		}
		comp, ok := v["component"].(map[string]any)
		if len(v) != 1 || !ok {
			t.Fatalf("top level is not {component}: %s", b)
		}
		if _, ok := comp["repositoryContexts"]; ok {
			t.Fatalf("repositoryContexts kept: %s", b)
		}
		for _, k := range []string{"resources", "sources", "componentReferences"} {
			l, ok := comp[k].([]any)
			if !ok {
				t.Fatalf("%s is not a list: %s", k, b)
			}
			if k == "componentReferences" {
				continue
			}
			for _, e := range l {
				if _, ok := e.(map[string]any)["access"]; ok {
					t.Fatalf("%s access kept: %s", k, b)
				}
			}
		}
	})
}

// FuzzCanonical checks the RFC 8785 writer on arbitrary JSON: the output is
// JSON with the same meaning (numbers compared as doubles) and is a fixed
// point of canonicalisation.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{
		`{"b":[1,2.50,-0,1e21,1e-7,5e-324],"a":{"\u20ac":"\u2028<&>","\ud83d\ude00":null,"\ufb33":true}}`,
		`["\u0000\u001f\"\\\/",{},[],""]`,
		`123456789012345678901234567890`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return
		}
		b, err := appendCanonical(nil, v)
		if err != nil {
			return // numbers beyond the double range are refused
		}
		var orig, back any
		if err := json.Unmarshal(data, &orig); err != nil {
			return
		}
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("output is not JSON: %v\n%s", err, b)
		}
		if !reflect.DeepEqual(orig, back) {
			t.Fatalf("meaning changed:\n%s\n%s", data, b)
		}
		dec = json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var w any
		if err := dec.Decode(&w); err != nil {
			t.Fatal(err)
		}
		again, err := appendCanonical(nil, w)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("not a fixed point (err %v):\n%s\n%s", err, b, again)
		}
	})
}
