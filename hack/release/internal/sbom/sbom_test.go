package sbom_test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/hack/release/internal/sbom"
)

// TestGenerate describes a small binary (testdata/linked): the binary, the
// standard library and go-containerregistry it links, as SPDX 2.3 with
// STATIC_LINK relationships; the same input gives the same document.
func TestGenerate(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "linked")
	if out, err := exec.Command("go", "build", "-trimpath", "-o", exe, "./testdata/linked").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	bins := []sbom.Binary{{Name: "linked", Platform: "linux/amd64", Path: exe}}
	created := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	doc, err := sbom.Generate("v1.2.3", created, bins)
	if err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	if err := sbom.Write(&a, doc); err != nil {
		t.Fatal(err)
	}
	again, _ := sbom.Generate("v1.2.3", created, bins)
	sbom.Write(&b, again)
	if a.String() != b.String() {
		t.Fatal("two documents of the same binaries differ")
	}
	var raw map[string]any
	if err := json.Unmarshal(a.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	if raw["spdxVersion"] != "SPDX-2.3" || raw["dataLicense"] != "CC0-1.0" || raw["SPDXID"] != "SPDXRef-DOCUMENT" {
		t.Errorf("header %v", raw)
	}
	ids := map[string]sbom.Package{}
	for _, p := range doc.Packages {
		if _, dup := ids[p.SPDXID]; dup {
			t.Errorf("duplicate SPDXID %s", p.SPDXID)
		}
		ids[p.SPDXID] = p
	}
	bin := doc.Packages[0]
	if bin.Name != "linked" || bin.VersionInfo != "v1.2.3" || len(bin.Checksums) != 1 || len(bin.Checksums[0].ChecksumValue) != 64 {
		t.Errorf("binary package %+v", bin)
	}
	var ggcr *sbom.Package
	for _, p := range doc.Packages {
		if p.Name == "github.com/google/go-containerregistry" {
			ggcr = &p
		}
	}
	if ggcr == nil || ggcr.VersionInfo != "v0.22.1" || ggcr.ExternalRefs[0].ReferenceLocator != "pkg:golang/github.com/google/go-containerregistry@v0.22.1" || !strings.HasPrefix(ggcr.Comment, "go.sum h1:") {
		t.Fatalf("go-containerregistry package %+v", ggcr)
	}
	links := map[string]bool{}
	for _, r := range doc.Relationships {
		if _, ok := ids[r.RelatedSPDXElement]; !ok {
			t.Errorf("relationship to unknown %s", r.RelatedSPDXElement)
		}
		if r.SPDXElementID == bin.SPDXID && r.RelationshipType == "STATIC_LINK" {
			links[ids[r.RelatedSPDXElement].Name] = true
		}
	}
	if !links["stdlib"] || !links["github.com/google/go-containerregistry"] {
		t.Errorf("static links %v", links)
	}
}
