package oci

import (
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/accessmethod"
)

// Every access type whose content the plugin reads is opened here, so
// that a Remote entry added to the table without its opener fails now,
// not at render time.
func TestEveryReadableMethodHasAnOpener(t *testing.T) {
	for _, n := range accessmethod.Names(accessmethod.Readable) {
		if _, ok := openerOf(n); !ok {
			t.Errorf("access type %s has no opener", n)
		}
	}
	for n := range remoteOpeners {
		if m, _ := accessmethod.Lookup(n); m.Where != accessmethod.Remote {
			t.Errorf("opener of %s, which is not a Remote method of the table", n)
		}
	}
}
