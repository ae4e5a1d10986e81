package archive_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"log"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/archive"
)

func Example() {
	// Build a small chart archive in memory, as a registry would serve it.
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, body := range map[string]string{
		"mychart/Chart.yaml":        "apiVersion: v2\nname: mychart\n",
		"mychart/templates/cm.yaml": "kind: ConfigMap\n",
	} {
		tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body))})
		tw.Write([]byte(body))
	}
	tw.Close()
	zw.Close()

	tree, err := archive.ReadTree(&buf, archive.WithMaxSize(10<<20), archive.WithMaxFiles(1000))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tree.Files())
	chart, _ := tree.ReadFile("mychart/Chart.yaml")
	fmt.Print(string(chart))

	// Hostile entries are refused with a sentinel callers can test for.
	buf.Reset()
	tw = tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "../etc/passwd", Typeflag: tar.TypeReg})
	tw.Close()
	_, err = archive.ReadTree(&buf)
	fmt.Println(errors.Is(err, errdef.ErrUnsafeArchive))
	fmt.Println(err)

	// Output:
	// [mychart/Chart.yaml mychart/templates/cm.yaml]
	// apiVersion: v2
	// name: mychart
	// true
	// archive entry "../etc/passwd": path escapes the archive root: unsafe archive
}
