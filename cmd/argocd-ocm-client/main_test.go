package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/server"
)

// The test binary doubles as the argocd-ocm-plugin the client falls back to
// (ARGOCD_OCM_PLUGIN_BINARY): it prints what it was started with.
func TestMain(m *testing.M) {
	if os.Getenv("CLIENT_TEST_AS_PLUGIN") == "1" {
		if os.Getenv("ARGOCD_APP_NAME") == "broken" {
			fmt.Fprintln(os.Stderr, "argocd-ocm-plugin: application broken: failed")
			os.Exit(1)
		}
		switch os.Getenv("ARGOCD_APP_NAME") {
		case "hog":
			hog() // as argocd-ocm-plugin's guard, then a render that grows without end
		case "noisy-hog":
			// Its pid for the test, then 16 KiB of warnings, then the hog.
			if err := os.WriteFile(os.Getenv("CLIENT_TEST_PID_FILE"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
				os.Exit(3)
			}
			for i := range 256 {
				fmt.Fprintf(os.Stderr, "warning %3d: %s\n", i, strings.Repeat("w", 50))
			}
			hog()
		}
		dir, _ := os.Getwd()
		fmt.Printf("process %s in %s app=%s\n", strings.Join(os.Args, " "), dir, os.Getenv("ARGOCD_APP_NAME"))
		os.Exit(0)
	}
	code := m.Run()
	if clientBin != "" {
		os.Remove(clientBin)
	}
	os.Exit(code)
}

var clientBin string

func buildClient(t *testing.T) string {
	t.Helper()
	if clientBin != "" {
		return clientBin
	}
	bin := filepath.Join(os.TempDir(), fmt.Sprintf("argocd-ocm-client-test-%d", os.Getpid()))
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	clientBin = bin
	return bin
}

type outcome struct {
	code           int
	stdout, stderr string
}

func runClient(t *testing.T, dir string, env []string, args ...string) outcome {
	t.Helper()
	cmd := exec.Command(buildClient(t), args...)
	cmd.Dir = dir
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return outcome{code, stdout.String(), stderr.String()}
}

// serve runs a render server whose handler echoes the request.
func serve(t *testing.T, fingerprint string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "cli")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "r.sock")
	l, err := server.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	s := &server.Server{Fingerprint: fingerprint, Handler: func(_ context.Context, req *server.Request, stdout, stderr io.Writer) int {
		app := req.Getenv(os.Getenv)("ARGOCD_APP_NAME")
		if app == "broken" {
			fmt.Fprintln(stderr, "argocd-ocm-plugin: application broken: failed")
			return 1
		}
		fmt.Fprintf(stdout, "server %s in %s app=%s\n", strings.Join(req.Args, " "), req.Dir, app)
		return 0
	}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Serve(ctx, l); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return sock
}

func TestClient(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sidecar := []string{"PATH=/usr/bin:/bin", "HOME=/home/argocd", "CLIENT_TEST_AS_PLUGIN=1", "ARGOCD_OCM_PLUGIN_BINARY=" + self}
	live := serve(t, server.Fingerprint(sidecar))
	other := serve(t, server.Fingerprint(append(sidecar, "DOCKER_CONFIG=/elsewhere")))
	env := func(socket, app string) []string {
		e := append([]string{"ARGOCD_APP_NAME=" + app}, sidecar...)
		if socket != "" {
			e = append(e, server.EnvSocket+"="+socket)
		}
		return e
	}
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want outcome
	}{
		{"server", env(live, "shop"), []string{"generate"}, outcome{0, "server generate in " + dir + " app=shop\n", ""}},
		{"server parameters", env(live, "shop"), []string{"parameters"}, outcome{0, "server parameters in " + dir + " app=shop\n", ""}},
		{"server failure", env(live, "broken"), []string{"generate"}, outcome{1, "", "argocd-ocm-plugin: application broken: failed\n"}},
		{"no server configured", env("", "shop"), []string{"generate"}, outcome{0, "process argocd-ocm-plugin generate in " + dir + " app=shop\n", ""}},
		{"nobody listening", env(filepath.Join(dir, "none.sock"), "shop"), []string{"generate"},
			outcome{0, "process argocd-ocm-plugin generate in " + dir + " app=shop\n", ""}},
		{"server of another environment", env(other, "shop"), []string{"generate"},
			outcome{0, "process argocd-ocm-plugin generate in " + dir + " app=shop\n", ""}},
		{"fallback failure", env("", "broken"), []string{"generate"}, outcome{1, "", "argocd-ocm-plugin: application broken: failed\n"}},
		{"other commands run in a process", env(live, "shop"), []string{"version"}, outcome{0, "process argocd-ocm-plugin version in " + dir + " app=shop\n", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runClient(t, dir, tc.env, tc.args...)
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// Without a server and without a plugin binary: a failure, nothing on stdout.
func TestClientWithoutPlugin(t *testing.T) {
	got := runClient(t, t.TempDir(), []string{"PATH=" + t.TempDir(), "ARGOCD_OCM_PLUGIN_BINARY="}, "generate")
	if got.code == 0 || got.stdout != "" || !strings.Contains(got.stderr, "no render server and no argocd-ocm-plugin binary") {
		t.Fatalf("%+v", got)
	}
}

// acceptThen runs a fake server that acknowledges every request and then
// does what after says with the connection.
func acceptThen(t *testing.T, after func(net.Conn)) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "cli")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "r.sock")
	l, err := server.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				if _, err := bufio.NewReader(c).ReadBytes('\n'); err != nil {
					c.Close()
					return
				}
				io.WriteString(c, `{"accepted":true}`+"\n")
				after(c)
			}()
		}
	}()
	return sock
}

// A server that took the request and then died, or never answers: one error
// line and a failure, never the request run a second time in a process (the
// fallback binary would print "process ...").
//
// No wall-time bound that a loaded machine could pass: what ended the
// client is told by events. The server that died does so with the
// client's deadline a minute away, so the reason "it died or stopped
// answering" (not "no answer within") says that the client did not wait for
// its deadline. The silent server holds the connection for a minute without
// a byte: the client ending before that, and not before its own deadline
// (ARGOCD_OCM_TIMEOUT 100 ms + the 2 s margin), says that the deadline ended
// it. (At load 16 "server silent" took 2.4-2.5 s against a 4 s bound.)
func TestClientNeverRunsAnAcceptedRequestTwice(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const silentFor = time.Minute
	sidecar := []string{"PATH=/usr/bin:/bin", "CLIENT_TEST_AS_PLUGIN=1", "ARGOCD_OCM_PLUGIN_BINARY=" + self, "ARGOCD_APP_NAME=shop"}
	died := acceptThen(t, func(c net.Conn) { c.Close() })
	silent := acceptThen(t, func(c net.Conn) { time.Sleep(silentFor); c.Close() })
	for _, tc := range []struct {
		name, socket, timeout, why string
		// The client ends within [min, max) of its start.
		min, max time.Duration
	}{
		{"server died", died, "1m", "it died or stopped answering", 0, clientDeadline(time.Minute)},
		{"server silent", silent, "100ms", "no answer within 2.1s", clientDeadline(100 * time.Millisecond), silentFor},
	} {
		t.Run(tc.name, func(t *testing.T) {
			buildClient(t) // not timed: the first test to run a client builds it (seconds on a loaded machine)
			start := time.Now()
			got := runClient(t, t.TempDir(), append(sidecar, server.EnvSocket+"="+tc.socket, "ARGOCD_OCM_TIMEOUT="+tc.timeout), "generate")
			took := time.Since(start)
			want := "argocd-ocm-client: application shop: render failed: the render server accepted the generation but gave no result (" + tc.why + ")\n"
			if got.code != 1 || got.stdout != "" || got.stderr != want {
				t.Errorf("got %+v, want exit 1, stderr %q", got, want)
			}
			if took < tc.min || took >= tc.max {
				t.Errorf("took %v, want at least %v and less than %v", took, tc.min, tc.max)
			}
			t.Logf("took %v", took.Round(time.Millisecond))
		})
	}
}

// hog is a generation that grows without end, in a plugin that limits
// itself as argocd-ocm-plugin does when the client supervises it (guard in
// cmd/argocd-ocm-plugin): its limit line on fd 3, then its address space.
func hog() {
	if os.Getenv(server.EnvGuarded) == strconv.Itoa(server.GuardFD) {
		f := os.NewFile(server.GuardFD, "guard")
		fmt.Fprintln(f, "argocd-ocm-plugin: application hog: component example.com/c:1.0.0: generation exceeded the memory limit of 128 MiB: limit exceeded")
		f.Close()
		if _, err := server.LimitOwnMemory(os.Getpid(), 128<<20); err != nil {
			fmt.Fprintln(os.Stderr, "no limit:", err)
			os.Exit(3)
		}
	}
	if os.Getenv("ARGOCD_APP_NAME") == "hog" {
		fmt.Fprintln(os.Stderr, "warning: a line a render may print first")
	}
	var hold [][]byte
	for {
		b := make([]byte, 8<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		hold = append(hold, b)
		if len(hold) > 256 { // 2 GiB: the limit did not hold
			fmt.Println("partial output")
			os.Exit(0)
		}
	}
}

// Issue 35, finding 6: without a render server the client runs the plugin
// as its child under a worker's hard memory limit (an address-space limit
// the plugin sets on itself) instead of the plugin's 10 ms poll alone (a
// Helm template doubling a string peaked at 1,028 MiB against 1 GiB). At the
// limit the Go runtime ends the plugin with a report and a traceback; the
// client prints the plugin's one line instead, nothing on stdout, and the
// plugin's peak stays below the limit and two heap arenas.
func TestFallbackHoldsAHardMemoryLimit(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(buildClient(t), "generate")
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"PATH=/usr/bin:/bin", "CLIENT_TEST_AS_PLUGIN=1", "ARGOCD_OCM_PLUGIN_BINARY=" + self, "ARGOCD_APP_NAME=hog"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	ee, _ := err.(*exec.ExitError)
	if ee == nil || ee.ExitCode() != 1 || stdout.Len() != 0 {
		t.Fatalf("client: %v, %d bytes of stdout; want exit 1 and nothing on stdout (stderr %q)", err, stdout.Len(), stderr.String())
	}
	want := "warning: a line a render may print first\nargocd-ocm-plugin: application hog: component example.com/c:1.0.0: generation exceeded the memory limit of 128 MiB: limit exceeded\n"
	if stderr.String() != want {
		t.Errorf("stderr %q, want the plugin's lines with its limit line instead of the runtime's report", stderr.String())
	}
	// The rusage of the client covers its reaped child. The child may map
	// its limit + one 64 MiB heap arena past the address space it had
	// reserved when it set the limit (server.LimitOwnMemory), and that
	// reservation holds the unused rest of its first arena: the bound
	// docs/render-server.md gives is the limit + two arenas.
	const bound = (128 + 2*64) << 20
	if peak := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10; peak >= bound {
		t.Errorf("peak RSS %d MiB, want below the limit of 128 MiB + two 64 MiB heap arenas (%d MiB)", peak>>20, bound>>20)
	} else {
		t.Logf("peak RSS %d MiB", peak>>20)
	}
}

// The client learns that its child ended at the limit from the Go
// runtime's report on the child's stderr, which it copies to its own
// stderr line by line; the copy lags behind the child's exit when the
// client's stderr is read slowly. The client waited one second after the
// exit for the rest, then ended with the child's exit status 2 and the
// runtime's report unread: no limit line. Here the client's stderr is a
// pipe of one page that is not read until the child has been reaped and
// stderrLag more has passed: its 16 KiB of warnings hold the client's copy
// behind them.
func TestFallbackReportsTheLimitHoweverLateItsStderr(t *testing.T) {
	const stderrLag = 2 * time.Second // the client waited 1 s
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	const fSetPipeSize = 1031 // F_SETPIPE_SZ
	if _, _, errno := syscall.Syscall(syscall.SYS_FCNTL, w.Fd(), fSetPipeSize, 4096); errno != 0 {
		t.Logf("pipe size left as it is: %v", errno)
	}
	cmd := exec.Command(buildClient(t), "generate")
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"PATH=/usr/bin:/bin", "CLIENT_TEST_AS_PLUGIN=1", "ARGOCD_OCM_PLUGIN_BINARY=" + self,
		"ARGOCD_APP_NAME=noisy-hog", "CLIENT_TEST_PID_FILE=" + pidFile}
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	// Not read until the child is gone and stderrLag has passed (a minute
	// for each wait is a safety net).
	var pid []byte
	for deadline := time.Now().Add(time.Minute); len(pid) == 0 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		pid, _ = os.ReadFile(pidFile)
	}
	if len(pid) == 0 {
		t.Fatal("the plugin never wrote its pid")
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat("/proc/" + string(pid)); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("plugin %s still there a minute after it started", pid)
		}
	}
	time.Sleep(stderrLag)
	stderr, _ := io.ReadAll(r)
	err = cmd.Wait()
	ee, _ := err.(*exec.ExitError)
	if ee == nil || ee.ExitCode() != 1 || stdout.Len() != 0 {
		t.Fatalf("client: %v, %d bytes of stdout; want exit 1 and nothing on stdout (stderr ends %q)", err, stdout.Len(), stderr[max(len(stderr)-300, 0):])
	}
	lines := strings.SplitAfter(string(stderr), "\n")
	const limit = "argocd-ocm-plugin: application hog: component example.com/c:1.0.0: generation exceeded the memory limit of 128 MiB: limit exceeded\n"
	if len(lines) != 258 || lines[255] != "warning 255: "+strings.Repeat("w", 50)+"\n" || lines[256] != limit || lines[257] != "" {
		t.Errorf("stderr: %d lines ending %q, want the 256 warnings and the limit line", len(lines), lines[max(len(lines)-3, 0):])
	}
}
