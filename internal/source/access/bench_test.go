package access_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/archive"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/access"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/ctf"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
)

// BenchmarkReadTree reads a directory resource from a CTF on disk: streamed
// (ReadTree) against the whole blob first, then unpacked (Read, then
// archive.ReadTree, as the pipeline did before ReadTree), for a small tree
// and for one with a 4 MiB file.
func BenchmarkReadTree(b *testing.B) {
	small := [][2]string{{"kustomization.yaml", "resources: [deploy.yaml]\n"}, {"deploy.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n"}}
	payload := make([]byte, 4<<20)
	rand.NewChaCha8([32]byte{2}).Read(payload)
	for _, tc := range []struct {
		name  string
		files [][2]string
	}{
		{"small", small},
		{"4MiB", append(small, [2]string{"data/payload.bin", string(payload)})},
	} {
		data := tarOf(b, true, tc.files...)
		dir := b.TempDir()
		comp := &ocmbuild.Component{Name: "example.com/tree", Version: "1.0.0", Provider: "example.com",
			Resources: []ocmbuild.Resource{{Name: "tree", Type: "directoryTree", Data: data, MediaType: "application/x-tgz"}}}
		if err := ocmbuild.WriteCTF(dir, comp); err != nil {
			b.Fatal(err)
		}
		repo, err := ctf.Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { repo.Close() })
		cv, err := repo.LookupComponentVersion(context.Background(), comp.Name, comp.Version)
		if err != nil {
			b.Fatal(err)
		}
		res := &cv.Descriptor().Resources[0]
		r := &access.Resolver{}
		b.Run(fmt.Sprintf("%s/streamed", tc.name), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.ReadTree(context.Background(), cv, res); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("%s/whole", tc.name), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c, err := r.Read(context.Background(), cv, res)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := archive.ReadTree(bytes.NewReader(c.Data)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
