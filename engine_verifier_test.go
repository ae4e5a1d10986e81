package argocdocm

import (
	"strings"
	"testing"
)

// Lists of public keys and root CAs that both disagree with the names are
// refused with the same error every time (the first list, public keys).
func TestSignatureListMismatchIsDeterministic(t *testing.T) {
	e := NewEngine()
	s := Signatures{Names: []string{"a", "b"}, PublicKeys: []string{"k1", "k2", "k3"}, RootCAs: []string{"r1", "r2", "r3"}}
	for range 64 {
		_, err := e.verifier(s)
		if err == nil || !strings.Contains(err.Error(), "2 signature names but 3 public keys") {
			t.Fatalf("got %v, want the public keys named", err)
		}
	}
}
