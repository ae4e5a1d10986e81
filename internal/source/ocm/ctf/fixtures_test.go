package ctf_test

import (
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/ctf"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
)

// The internal tests cannot import internal/testsupport/ocmbuild (it imports package
// ctf): they build their archives through these.
func init() {
	ctf.WriteTestTgz = func(p, comp string, data []byte) error {
		return ocmbuild.WriteCTFArchive(p, true, dataComponent(comp, data))
	}
	ctf.StoredTestTgz = func(comp string, data []byte) ([]byte, error) {
		return ocmbuild.StoredCTFTgz(dataComponent(comp, data))
	}
}

func dataComponent(comp string, data []byte) *ocmbuild.Component {
	return &ocmbuild.Component{Name: comp, Version: "1.0.0", Resources: []ocmbuild.Resource{{Name: "data", Type: "blob", Data: data, MediaType: "application/octet-stream"}}}
}
