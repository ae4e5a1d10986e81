package accessmethod

import (
	"errors"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

// Every spelling ocm.Access.Kind accepted before the table (its alias map),
// plus what the OCM CLI writes today, comes out as the same canonical name.
func TestCanonicalSpellings(t *testing.T) {
	for in, want := range map[string]string{
		"localBlob": LocalBlob, "LocalBlob/v1": LocalBlob, "localblob": LocalBlob,
		"localFilesystemBlob/v1": LocalFilesystemBlob,
		"ociArtifact/v1":         OCIArtifact, "OCIImage/v1": OCIArtifact, "ociRegistry": OCIArtifact, "ociimage": OCIArtifact,
		"ociBlob/v1": OCIBlob, "ociImageLayer/v1": OCIBlob,
		"relativeOciReference/v1": RelativeOCIReference, "RELATIVEOCIREFERENCE": RelativeOCIReference,
		"helm/v1": Helm, "none": None,
		"s3/v1": "s3", "S3": "S3", "a/b/v1": "a/b", "": "",
	} {
		if got := Canonical(in); got != want {
			t.Errorf("Canonical(%q) = %q, want %q", in, got, want)
		}
		m, ok := Lookup(in)
		if known := m.Name != ""; ok != known || (ok && m.Name != want) {
			t.Errorf("Lookup(%q) = %q, %v", in, m.Name, ok)
		}
	}
}

// Facts a reader relies on hold for each entry.
func TestTableFacts(t *testing.T) {
	for _, m := range methods {
		if (m.Where == Local) != (m.LocalRef != "") {
			t.Errorf("%s: local blobs, and only they, name a LocalRef", m.Name)
		}
		if m.Layer && m.Where != Local {
			t.Errorf("%s: a layer is local", m.Name)
		}
		if (m.ImageRef != "" || m.Artifact) && m.Where != Remote {
			t.Errorf("%s: an image reference or artifact is remote", m.Name)
		}
		if Readable(m) != (len(m.Digests) > 0) {
			t.Errorf("%s: readable content, and only it, is named by a digest", m.Name)
		}
	}
}

func TestUnsupported(t *testing.T) {
	err := Unsupported("s3/v1", func(m Method) bool { return m.Where == Local })
	if !errors.Is(err, errdef.ErrUnsupportedAccess) || err.Error() != `unsupported access type "s3/v1" (supported: localBlob, localFilesystemBlob)` {
		t.Fatal(err)
	}
}
