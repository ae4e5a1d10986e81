package cmpservice

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

// entry is one tar entry: a file (Body), a directory (name ending in /)
// or a symbolic link (Link).
type entry struct {
	Name, Body, Link string
}

func tgz(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		h := &tar.Header{Name: e.Name, Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(e.Body))}
		switch {
		case e.Link != "":
			h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, e.Link, 0
		case strings.HasSuffix(e.Name, "/"):
			h.Typeflag, h.Mode, h.Size = tar.TypeDir, 0o755, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(e.Body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// messages is a stream as the repo-server sends it: metadata, then the tgz
// in 1 KiB chunks.
func messages(rel string, data []byte) []streamRequest {
	sum := sha256.Sum256(data)
	ms := []streamRequest{{Metadata: &metadata{AppName: "shop", AppRelPath: rel, Checksum: hex.EncodeToString(sum[:]), Size: int64(len(data))}}}
	for len(data) > 0 {
		n := min(1024, len(data))
		ms = append(ms, streamRequest{Chunk: data[:n], HasChunk: true})
		data = data[n:]
	}
	return ms
}

func recvFrom(ms []streamRequest) recvFunc {
	return func(m *streamRequest) error {
		if len(ms) == 0 {
			return io.EOF
		}
		*m, ms = ms[0], ms[1:]
		return nil
	}
}

func receiveInto(t *testing.T, lim Limits, ms []streamRequest) (string, string, error) {
	t.Helper()
	dir := t.TempDir()
	_, appDir, err := receive(context.Background(), recvFrom(ms), dir, lim.withDefaults())
	return dir, appDir, err
}

// Only the Application's directory is unpacked: its files, directories and
// links; nothing of the rest of the repository, and no link that leads out
// of the directory.
func TestReceiveUnpacksTheApplicationsDirectoryOnly(t *testing.T) {
	data := tgz(t,
		entry{Name: "secret.yaml", Body: "other tenant"},
		entry{Name: "apps/"},
		entry{Name: "apps/shop/"},
		entry{Name: "apps/shop/values.yaml", Body: "a: 1"},
		entry{Name: "apps/shop/env/prod.yaml", Body: "b: 2"},
		entry{Name: "apps/shop/current.yaml", Link: "env/prod.yaml"},
		entry{Name: "apps/shop/up.yaml", Link: "../../secret.yaml"},
		entry{Name: "apps/shop/abs.yaml", Link: "/etc/passwd"},
		entry{Name: "apps/shopping/x.yaml", Body: "not this one"},
	)
	dir, appDir, err := receiveInto(t, Limits{}, messages("apps/shop", data))
	if err != nil {
		t.Fatal(err)
	}
	if appDir != filepath.Join(dir, "apps", "shop") {
		t.Fatalf("app dir %s", appDir)
	}
	for name, want := range map[string]string{"values.yaml": "a: 1", "env/prod.yaml": "b: 2", "current.yaml": "b: 2"} {
		b, err := os.ReadFile(filepath.Join(appDir, name))
		if err != nil || string(b) != want {
			t.Errorf("%s: %q, %v", name, b, err)
		}
	}
	// As argocd-cmp-server's Untgz: an absolute target is taken from the
	// link's directory; one leaving the directory points nowhere.
	for name, want := range map[string]string{"up.yaml": outside, "abs.yaml": "etc/passwd"} {
		if got, err := os.Readlink(filepath.Join(appDir, name)); err != nil || got != want {
			t.Errorf("%s -> %q (%v), want %q", name, got, err, want)
		}
		if _, err := os.Stat(filepath.Join(appDir, name)); err == nil {
			t.Errorf("%s: a link leaving the directory leads to a file", name)
		}
	}
	for _, name := range []string{"secret.yaml", "apps/shopping"} {
		if _, err := os.Lstat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s outside the Application's directory was unpacked (%v)", name, err)
		}
	}
}

// A link that stays inside by its name but points at the directory itself
// cannot carry a later entry (or link) out of it: writes go through a root.
func TestReceiveLinksCannotCarryEntriesOut(t *testing.T) {
	outside := t.TempDir()
	data := tgz(t,
		entry{Name: "self", Link: "."},
		entry{Name: "self/up", Link: "../" + filepath.Base(outside)},
		entry{Name: "self/up/planted.yaml", Body: "x"},
	)
	_, _, err := receiveInto(t, Limits{}, messages(".", data))
	if err == nil {
		t.Fatal("no error")
	}
	if _, serr := os.Stat(filepath.Join(outside, "planted.yaml")); !errors.Is(serr, os.ErrNotExist) {
		t.Fatalf("a file was written outside the Application's directory (%v)", serr)
	}
}

func TestReceiveRefusals(t *testing.T) {
	small := tgz(t, entry{Name: "a.yaml", Body: "a"})
	many := make([]entry, 12)
	for i := range many {
		many[i] = entry{Name: strings.Repeat("d/", i) + "f.yaml", Body: "x"}
	}
	manyData := tgz(t, many...)
	bomb := tgz(t, entry{Name: "other/zeros", Body: strings.Repeat("\x00", 1<<20)})
	tampered := messages(".", small)
	tampered[0].Metadata.Checksum = strings.Repeat("0", 64)
	for _, tc := range []struct {
		name string
		lim  Limits
		ms   []streamRequest
		is   error
		msg  string
	}{
		{"no metadata", Limits{}, messages(".", small)[1:], errdef.ErrInvalidInput, "does not start with its metadata"},
		{"path leaves the stream", Limits{}, messages("../x", small), errdef.ErrInvalidInput, "leaves the repository stream"},
		{"absolute path", Limits{}, messages("/etc", small), errdef.ErrInvalidInput, "leaves the repository stream"},
		{"checksum", Limits{}, tampered, errdef.ErrInvalidInput, "does not match its checksum"},
		{"second metadata", Limits{}, append(messages(".", small), messages(".", small)[0]), errdef.ErrInvalidInput, "second metadata"},
		{"not gzip", Limits{}, messages(".", []byte("plain text, no gzip")), errdef.ErrInvalidInput, "not gzip"},
		{"stream bytes", Limits{StreamBytes: 100}, messages(".", bomb), errdef.ErrLimitExceeded, "manifest-generate-paths"},
		{"tar bytes", Limits{TarBytes: 64 << 10}, messages("app", bomb), errdef.ErrLimitExceeded, "unpacks to more than"},
		{"files", Limits{Files: 5}, messages(".", manyData), errdef.ErrLimitExceeded, "more than 5 files"},
		{"depth", Limits{Depth: 4}, messages(".", manyData), errdef.ErrLimitExceeded, "deeper than 4"},
		{"bytes", Limits{Bytes: 8}, messages(".", manyData), errdef.ErrLimitExceeded, "holds more than 8 B"},
		{"duplicate", Limits{}, messages(".", tgz(t, entry{Name: "a", Body: "1"}, entry{Name: "a", Body: "2"})), nil, "unpacking \"a\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, _, err := receiveInto(t, tc.lim, tc.ms)
			if err == nil {
				t.Fatal("no error")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.msg) || strings.Contains(err.Error(), dir) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q: want %q, one line, no server path", err, tc.msg)
			}
		})
	}
}

// Links are unpacked as argocd-cmp-server's Untgz unpacks them (an absolute
// target is relative to the link's directory), except that one leaving the
// Application's directory points nowhere: the plugin refuses it as it
// refuses the link argocd-cmp-server leaves pointing into the rest of the
// repository, instead of finding no file.
func TestReceiveLinksAsArgoCD(t *testing.T) {
	data := tgz(t,
		entry{Name: "team/secret.yaml", Body: "token: s3cr3t\n"},
		entry{Name: "team/apps/web/"},
		entry{Name: "team/apps/web/values.yaml", Body: "replicaCount: 5\n"},
		entry{Name: "team/apps/web/in.yaml", Link: "values.yaml"},
		entry{Name: "team/apps/web/conf/up.yaml", Link: "../values.yaml"},
		entry{Name: "team/apps/web/abs.yaml", Link: "/values.yaml"},
		entry{Name: "team/apps/web/conf/abs.yaml", Link: "/../../values.yaml"},
		entry{Name: "team/apps/web/leak.yaml", Link: "../../secret.yaml"},
		entry{Name: "team/apps/web/far.yaml", Link: "../../../../../../etc/passwd"},
	)
	_, appDir, err := receiveInto(t, Limits{}, messages("team/apps/web", data))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"in.yaml": "values.yaml", "conf/up.yaml": "../values.yaml", "abs.yaml": "values.yaml",
		"conf/abs.yaml": "values.yaml", "leak.yaml": outside, "far.yaml": outside,
	} {
		if got, err := os.Readlink(filepath.Join(appDir, name)); err != nil || got != want {
			t.Errorf("%s -> %q (%v), want %q", name, got, err, want)
		}
	}
	root, err := os.OpenRoot(appDir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, name := range []string{"in.yaml", "conf/up.yaml", "abs.yaml"} {
		if b, err := root.ReadFile(name); err != nil || string(b) != "replicaCount: 5\n" {
			t.Errorf("%s reads %q, %v", name, b, err)
		}
	}
	if _, err := root.Stat("conf/abs.yaml"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("conf/abs.yaml (conf/values.yaml, as Argo CD links it): %v, want not found", err)
	}
	for _, name := range []string{"leak.yaml", "far.yaml"} {
		// Refused as leaving the root, not missing: the plugin says so.
		if _, err := root.Stat(name); err == nil || errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %v, want refused as leaving the directory", name, err)
		}
		if _, err := os.Stat(filepath.Join(appDir, name)); err == nil {
			t.Errorf("%s resolves to a file", name)
		}
	}
}

// An entry below a link unpacked before it is refused, as argocd-cmp-server
// refuses it: "up/escape.yaml -> ../secret.yaml" under "up -> ." reads as
// inside by name and leads outside.
func TestReceiveRefusesEntriesBelowALink(t *testing.T) {
	for _, below := range []entry{
		{Name: "up/escape.yaml", Link: "../secret.yaml"},
		{Name: "up/file.yaml", Body: "x: 1\n"},
		{Name: "up/dir/"},
	} {
		data := tgz(t, entry{Name: "values.yaml", Body: "x: 1\n"}, entry{Name: "up", Link: "."}, below)
		_, _, err := receiveInto(t, Limits{}, messages(".", data))
		if !errors.Is(err, errdef.ErrInvalidInput) || !strings.Contains(err.Error(), `below the symbolic link "up"`) {
			t.Errorf("%s: %v, want refused", below.Name, err)
		}
	}
}
