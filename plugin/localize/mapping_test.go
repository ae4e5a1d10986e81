package localize_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/localize"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/ocm"
)

func TestMappingAssign(t *testing.T) {
	res := imageRes("api", "1.4.2", "registry.internal.example:5000/mirror/shop-api:1.4.2@"+digest, nil)
	img, err := localize.ImageOf(&res)
	if err != nil {
		t.Fatal(err)
	}
	as, err := localize.Mapping{Image: "a.image", Repository: "a.repo", Registry: "a.reg", Tag: "a.tag", Digest: "a.digest"}.Assign(img)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, a := range as {
		got[a.Path.String()] = a.Value
	}
	want := map[string]string{
		"a.image": "registry.internal.example:5000/mirror/shop-api:1.4.2@" + digest, "a.repo": "registry.internal.example:5000/mirror/shop-api",
		"a.reg": "registry.internal.example:5000", "a.tag": "1.4.2", "a.digest": digest,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	// A digest the component does not know cannot be mapped; nor a tag a reference lacks.
	res2 := imageRes("x", "1", "ghcr.io/a/b@"+digest, nil)
	img2, _ := localize.ImageOf(&res2)
	if _, err := (localize.Mapping{Tag: "t"}).Assign(img2); err == nil || !strings.Contains(err.Error(), "has no tag") {
		t.Errorf("got %v", err)
	}
	res3 := imageRes("y", "1", "ghcr.io/a/b:1", nil)
	img3, _ := localize.ImageOf(&res3)
	if _, err := (localize.Mapping{Digest: "d"}).Assign(img3); err == nil || !strings.Contains(err.Error(), "not known") {
		t.Errorf("got %v", err)
	}
}

func TestHint(t *testing.T) {
	res := imageRes("image", "6.7.0", "ghcr.io/a/b:1", nil)
	if _, ok, err := localize.Hint(&res); ok || err != nil {
		t.Fatalf("no label: %v %v", ok, err)
	}
	res.Labels = []ocm.Label{{Name: localize.HintLabel, Value: json.RawMessage(`{"valuesPath": "image"}`)}}
	m, ok, err := localize.Hint(&res)
	if !ok || err != nil || m.Repository != "image.repository" || m.Tag != "image.tag" || m.Image != "" {
		t.Fatalf("%+v %v %v", m, ok, err)
	}
	res.Labels[0].Value = json.RawMessage(`{"image": "app.image"}`)
	if m, _, _ := localize.Hint(&res); m.Image != "app.image" || m.Repository != "" {
		t.Fatalf("%+v", m)
	}
	res.Labels[0].Value = json.RawMessage(`"image"`)
	if _, _, err := localize.Hint(&res); err == nil {
		t.Fatal("a string hint was accepted")
	}
}
