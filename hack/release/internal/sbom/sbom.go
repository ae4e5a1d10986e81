// Package sbom writes an SPDX 2.3 JSON document of release binaries from the
// module graph the Go linker recorded in them (debug/buildinfo, what
// `go version -m` prints): each binary is a package, each module it links a
// package it statically links, with its go.sum hash. Only what is in the
// binaries is listed, not test or tool dependencies.
package sbom

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime/debug"
	"sort"
	"strings"
	"time"
)

// Binary is one release binary.
type Binary struct {
	Name     string // argocd-ocm-plugin
	Platform string // linux/amd64
	Path     string // file on this machine
}

// Document is the SPDX document (the fields this package writes).
type Document struct {
	SPDXVersion       string         `json:"spdxVersion"`
	DataLicense       string         `json:"dataLicense"`
	SPDXID            string         `json:"SPDXID"`
	Name              string         `json:"name"`
	DocumentNamespace string         `json:"documentNamespace"`
	CreationInfo      CreationInfo   `json:"creationInfo"`
	Packages          []Package      `json:"packages"`
	Relationships     []Relationship `json:"relationships"`
}

type CreationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

type Package struct {
	SPDXID                string        `json:"SPDXID"`
	Name                  string        `json:"name"`
	VersionInfo           string        `json:"versionInfo,omitempty"`
	DownloadLocation      string        `json:"downloadLocation"`
	FilesAnalyzed         bool          `json:"filesAnalyzed"`
	Checksums             []Checksum    `json:"checksums,omitempty"`
	LicenseConcluded      string        `json:"licenseConcluded"`
	LicenseDeclared       string        `json:"licenseDeclared"`
	CopyrightText         string        `json:"copyrightText"`
	PrimaryPackagePurpose string        `json:"primaryPackagePurpose,omitempty"`
	ExternalRefs          []ExternalRef `json:"externalRefs,omitempty"`
	Comment               string        `json:"comment,omitempty"`
}

type Checksum struct {
	Algorithm     string `json:"algorithm"`
	ChecksumValue string `json:"checksumValue"`
}

type ExternalRef struct {
	ReferenceCategory string `json:"referenceCategory"`
	ReferenceType     string `json:"referenceType"`
	ReferenceLocator  string `json:"referenceLocator"`
}

type Relationship struct {
	SPDXElementID      string `json:"spdxElementId"`
	RelationshipType   string `json:"relationshipType"`
	RelatedSPDXElement string `json:"relatedSpdxElement"`
}

// MainModule is the product's module path.
const MainModule = "github.com/argocd-ocm-plugin/argocd-ocm-plugin"

var unsafeID = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

func spdxID(kind, s string) string {
	return "SPDXRef-" + kind + "-" + unsafeID.ReplaceAllString(s, "-")
}

func purl(path, version string) string {
	return "pkg:golang/" + path + "@" + version
}

// Generate reads the build information of bins and returns the document.
// version is the release version (the main module's, which a source build
// records as "(devel)"); created is the document's creation time.
func Generate(version string, created time.Time, bins []Binary) (*Document, error) {
	doc := &Document{
		SPDXVersion: "SPDX-2.3", DataLicense: "CC0-1.0", SPDXID: "SPDXRef-DOCUMENT",
		Name: "argocd-ocm-plugin-" + version,
		CreationInfo: CreationInfo{
			Created:  created.UTC().Format(time.RFC3339),
			Creators: []string{"Organization: argocd-ocm-plugin", "Tool: argocd-ocm-plugin-hack-release"},
		},
	}
	modules := map[string]Package{}
	content := sha256.New()
	for _, b := range bins {
		info, err := buildinfo.ReadFile(b.Path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", b.Path, err)
		}
		sum, err := fileSHA256(b.Path)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(content, "%s %s %s\n", b.Platform, b.Name, sum)
		var settings []string
		for _, s := range info.Settings {
			settings = append(settings, s.Key+"="+s.Value)
		}
		binID := spdxID("Binary", b.Platform+"-"+b.Name)
		doc.Packages = append(doc.Packages, Package{
			SPDXID: binID, Name: b.Name, VersionInfo: version, DownloadLocation: "NOASSERTION",
			Checksums:        []Checksum{{Algorithm: "SHA256", ChecksumValue: sum}},
			LicenseConcluded: "NOASSERTION", LicenseDeclared: "Apache-2.0", CopyrightText: "NOASSERTION",
			PrimaryPackagePurpose: "APPLICATION",
			ExternalRefs:          []ExternalRef{{"PACKAGE-MANAGER", "purl", purl(MainModule, version)}},
			Comment:               fmt.Sprintf("%s binary for %s, package %s, built with %s; %s", b.Name, b.Platform, info.Path, info.GoVersion, strings.Join(settings, " ")),
		})
		doc.Relationships = append(doc.Relationships, Relationship{"SPDXRef-DOCUMENT", "DESCRIBES", binID})

		linkModules(doc, modules, binID, info)
	}
	keys := make([]string, 0, len(modules))
	for k := range modules {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		doc.Packages = append(doc.Packages, modules[k])
	}
	doc.DocumentNamespace = fmt.Sprintf("https://github.com/argocd-ocm-plugin/argocd-ocm-plugin/releases/%s/sbom-%s", version, hex.EncodeToString(content.Sum(nil))[:16])
	return doc, nil
}

// linkModules records the standard library and the modules info lists as
// packages in modules, once each, and relates the binary binID to them.
func linkModules(doc *Document, modules map[string]Package, binID string, info *debug.BuildInfo) {
	stdlib := "stdlib@" + info.GoVersion
	if _, ok := modules[stdlib]; !ok {
		modules[stdlib] = Package{
			SPDXID: spdxID("Module", stdlib), Name: "stdlib", VersionInfo: info.GoVersion, DownloadLocation: "NOASSERTION",
			LicenseConcluded: "NOASSERTION", LicenseDeclared: "NOASSERTION", CopyrightText: "NOASSERTION",
			PrimaryPackagePurpose: "LIBRARY",
			ExternalRefs:          []ExternalRef{{"PACKAGE-MANAGER", "purl", purl("stdlib", info.GoVersion)}},
			Comment:               "the Go standard library and runtime",
		}
	}
	doc.Relationships = append(doc.Relationships, Relationship{binID, "STATIC_LINK", modules[stdlib].SPDXID})
	for _, d := range info.Deps {
		key, p := modulePackage(d)
		if _, ok := modules[key]; !ok {
			modules[key] = p
		}
		doc.Relationships = append(doc.Relationships, Relationship{binID, "STATIC_LINK", modules[key].SPDXID})
	}
}

// modulePackage returns the key (path@version) and the package of the module
// a binary links for the dependency d, the replacement if there is one.
func modulePackage(d *debug.Module) (string, Package) {
	m := d
	if d.Replace != nil {
		m = d.Replace
	}
	key := m.Path + "@" + m.Version
	p := Package{
		SPDXID: spdxID("Module", key), Name: m.Path, VersionInfo: m.Version, DownloadLocation: "NOASSERTION",
		LicenseConcluded: "NOASSERTION", LicenseDeclared: "NOASSERTION", CopyrightText: "NOASSERTION",
		PrimaryPackagePurpose: "LIBRARY",
		ExternalRefs:          []ExternalRef{{"PACKAGE-MANAGER", "purl", purl(m.Path, m.Version)}},
	}
	if m.Sum != "" {
		p.Comment = "go.sum " + m.Sum
	}
	if d.Replace != nil {
		p.Comment = strings.TrimSpace(fmt.Sprintf("replaces %s@%s; %s", d.Path, d.Version, p.Comment))
	}
	return key, p
}

// Write writes doc as indented JSON.
func Write(w io.Writer, doc *Document) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
