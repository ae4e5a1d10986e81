package ocimapping

import (
	"archive/tar"
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

func tarOf(t *testing.T, entries ...[2]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		if err := tw.WriteHeader(&tar.Header{Name: e[0], Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(e[1]))}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(e[1]))
	}
	tw.Close()
	return buf.Bytes()
}

// A descriptor tar layer is read by package archive, the plugin's one tar
// reader: its entries are confined and bounded like a resource's.
func TestDescriptorTarLayer(t *testing.T) {
	const doc = "meta: {schemaVersion: v2}\n"
	for _, tc := range []struct {
		name   string
		layer  []byte
		want   string
		sentry error
		msg    string
	}{
		{"the file", tarOf(t, [2]string{descriptorFileName, doc}), doc, nil, ""},
		{"./ and other files", tarOf(t, [2]string{"README", "x"}, [2]string{"./" + descriptorFileName, doc}), doc, nil, ""},
		{"none", tarOf(t, [2]string{"other.yaml", doc}), "", errdef.ErrInvalidDescriptor, "has no " + descriptorFileName},
		{"escaping entry", tarOf(t, [2]string{"../" + descriptorFileName, doc}), "", errdef.ErrUnsafeArchive, "escapes"},
		{"too large", tarOf(t, [2]string{descriptorFileName, strings.Repeat("#", 5<<20)}), "", errdef.ErrLimitExceeded, ""},
		{"not a tar", []byte("garbage"), "", errdef.ErrInvalidDescriptor, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := descriptorBytes(MediaTypeDescriptorTar, tc.layer)
			if tc.sentry == nil {
				if err != nil || string(b) != tc.want {
					t.Fatalf("got %q, %v", b, err)
				}
				return
			}
			if !errors.Is(err, tc.sentry) || !errors.Is(err, errdef.ErrInvalidDescriptor) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v, want %v", err, tc.sentry)
			}
		})
	}
}
