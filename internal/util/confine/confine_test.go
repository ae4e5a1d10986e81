package confine_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/confine"
)

// sandbox is base/app (the root) beside base/outside. With targets, outside
// holds what the links point at; without, it is empty, and every refusal
// must read the same.
func sandbox(t *testing.T, targets bool) (base string, root *confine.Root) {
	t.Helper()
	base = t.TempDir()
	app, out := filepath.Join(base, "app"), filepath.Join(base, "outside")
	must(t, os.MkdirAll(filepath.Join(app, "values"), 0o755))
	must(t, os.MkdirAll(out, 0o755))
	must(t, os.WriteFile(filepath.Join(app, "values", "prod.yaml"), []byte("replicaCount: 4\n"), 0o644))
	must(t, syscall.Mkfifo(filepath.Join(app, "fifo"), 0o644))
	if targets {
		must(t, os.WriteFile(filepath.Join(out, "config.json"), []byte(`{"auths":{"r.example.test":{"password":"hunter2"}}}`), 0o600))
		must(t, os.MkdirAll(filepath.Join(out, "private-ctf"), 0o755))
		must(t, syscall.Mkfifo(filepath.Join(out, "fifo"), 0o644))
	}
	for link, target := range map[string]string{
		"out-file":      "../outside/config.json",
		"out-abs":       filepath.Join(out, "config.json"),
		"out-dir":       "../outside",
		"out-fifo":      "../outside/fifo",
		"chain-1":       "chain-2",
		"chain-2":       "values/../../outside/config.json",
		"dev-zero":      "/dev/zero",
		"proc-stdout":   "/proc/self/fd/1",
		"in-fifo":       "fifo",
		"values/up":     "../../outside",
		"loop-a":        "loop-b",
		"loop-b":        "loop-a",
		"alias.yaml":    "values/prod.yaml",
		"values-alias":  "values",
		"values/parent": "..",
	} {
		must(t, os.Symlink(target, filepath.Join(app, filepath.FromSlash(link))))
	}
	root, err := confine.Open(app)
	must(t, err)
	t.Cleanup(func() { root.Close() })
	return base, root
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// hostileNames are refused whatever lies outside the root.
func hostileNames(base string) []string {
	out := filepath.Join(base, "outside")
	return []string{
		"../outside/config.json",
		out + "/config.json",
		"values/../../outside/config.json", // .. in the middle
		"values//../../outside/config.json",
		"./../outside/private-ctf",
		"..",
		"/",
		"",
		"out-file", "out-abs", "out-dir", "out-dir/config.json", "out-fifo", "chain-1",
		"dev-zero", "proc-stdout", "/dev/zero", "/proc/self/fd/1", "fifo", "in-fifo",
		"values/up/config.json", "loop-a", "values/parent/../outside/config.json",
		"a\x00b",
	}
}

// Every hostile name gets the one refusal, identical whether the outside
// target exists or not, promptly (a FIFO must not block the open).
func TestHostileNamesAreRefusedAlike(t *testing.T) {
	withBase, with := sandbox(t, true)
	withoutBase, without := sandbox(t, false)
	names := hostileNames(withBase)
	for i, name := range names {
		other := strings.ReplaceAll(hostileNames(withoutBase)[i], withoutBase, withBase)
		if other != name {
			t.Fatalf("tables differ: %q, %q", name, other)
		}
		t.Run(strings.ReplaceAll(name, withBase, "BASE"), func(t *testing.T) {
			err1 := within(t, func() error { return openAll(with, name) })
			err2 := within(t, func() error { return openAll(without, strings.ReplaceAll(name, withBase, withoutBase)) })
			if err1 == nil {
				t.Fatal("not refused")
			}
			if !errors.Is(err1, errdef.ErrInvalidInput) || !strings.Contains(err1.Error(), "not a file or directory inside the Application's directory") {
				t.Fatalf("not the refusal: %v", err1)
			}
			if !strings.HasPrefix(err1.Error(), "invalid input: repository "+errdef.Quote(name)+": ") {
				t.Fatalf("does not name the parameter and the name: %v", err1)
			}
			m1 := err1.Error()
			m2 := strings.ReplaceAll(err2.Error(), withoutBase, withBase)
			if m1 != m2 {
				t.Fatalf("an oracle: target there: %q, target missing: %q", m1, m2)
			}
			if strings.Contains(m1, "hunter2") {
				t.Fatalf("leaks the file: %q", m1)
			}
		})
	}
}

// openAll tries every way in: Stat, Open, OpenFile, and one error out of them.
func openAll(r *confine.Root, name string) error {
	var errs []string
	k, err := r.Stat("repository", name)
	if err == nil && k != confine.Missing {
		return nil
	}
	if err != nil {
		errs = append(errs, err.Error())
	}
	f, d, err := r.Open("repository", name)
	if err == nil {
		if f != nil {
			f.Close()
		}
		if d != nil {
			d.Close()
		}
		return nil
	}
	errs = append(errs, err.Error())
	if f, err := r.OpenFile("repository", name); err == nil {
		f.Close()
		return nil
	} else {
		errs = append(errs, err.Error())
	}
	// The three must agree.
	for _, e := range errs[1:] {
		if e != errs[0] {
			return errors.New("Stat, Open and OpenFile disagree: " + strings.Join(errs, " | "))
		}
	}
	return err
}

// within fails the test when fn does not return in time: a blocked open
// would hang a generation past every deadline.
func within(t *testing.T, fn func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("blocked")
		return nil
	}
}

// Unicode look-alikes of "." are names like any other: they do not exist,
// and they do not escape.
func TestLookAlikeDotsDoNotExist(t *testing.T) {
	_, root := sandbox(t, true)
	for _, name := range []string{"\u2024\u2024/outside/config.json", "\uff0e\uff0e/outside/config.json", "\u2025/outside/config.json", ".\u200b./outside/config.json"} {
		_, _, err := root.Open("value-files", name)
		var missing *confine.MissingError
		if !errors.As(err, &missing) || !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%q: %v, want missing", name, err)
		}
	}
}

// Links that stay inside resolve, so committed aliases keep working.
func TestLinksInsideTheRootResolve(t *testing.T) {
	_, root := sandbox(t, true)
	f, err := root.OpenFile("value-files", "alias.yaml")
	must(t, err)
	b, _ := io.ReadAll(f)
	f.Close()
	if string(b) != "replicaCount: 4\n" {
		t.Fatalf("read %q", b)
	}
	_, d, err := root.Open("repository", "values-alias")
	if err != nil || d == nil {
		t.Fatalf("directory link: %v", err)
	}
	d.Close()
	if _, err := root.OpenFile("value-files", "values/parent/values/prod.yaml"); err != nil {
		t.Fatalf("link to .. inside: %v", err)
	}
	if _, err := root.OpenFile("value-files", "values"); err == nil || !strings.Contains(err.Error(), "a directory, not a file") {
		t.Fatalf("directory as a file: %v", err)
	}
	if !root.Exists("values/prod.yaml") || root.Exists("out-file") || root.Exists("fifo") || root.Exists("nope") {
		t.Fatal("Exists")
	}
}

func TestMissingInsideSaysSo(t *testing.T) {
	_, root := sandbox(t, true)
	_, err := root.OpenFile("value-files", "values/none.yaml")
	if !errors.Is(err, fs.ErrNotExist) || err.Error() != `value-files "values/none.yaml": no such file or directory in the Application's directory` {
		t.Fatalf("%v", err)
	}
}

// A refusal quotes the name capped (errdef.Quote).
func TestRefusalIsCapped(t *testing.T) {
	err := confine.Refused("repository", "../"+strings.Repeat("a", 10000))
	if len(err.Error()) > 400 {
		t.Fatalf("refusal is %d bytes", len(err.Error()))
	}
}
