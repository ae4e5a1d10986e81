package accessmethod_test

import (
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/accessmethod"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/signing"
)

// The table cannot import signing (signing imports the model, which imports
// the table), so its normalisation names are checked against signing's here.
func TestDigestNamesAreSigningsOwn(t *testing.T) {
	if accessmethod.GenericBlobDigest != signing.GenericBlobDigestV1 || accessmethod.OCIArtifactDigest != signing.OCIArtifactDigestV1 {
		t.Fatal("digest normalisation names differ from signing's")
	}
}
