package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// What make e2e hands the harness (see the Makefile's e2e target).
var (
	e2eBin    = os.Getenv("E2E_BIN")          // argocd (+ its argv[0] links), kube-apiserver, git-verify-wrapper.sh
	pluginBin = os.Getenv("E2E_PLUGIN_BIN")   // argocd-ocm-plugin, argocd-ocm-client as make build builds them
	argoDir   = os.Getenv("E2E_ARGOCD_DIR")   // the argo-cd v3 module's directory (manifests/crds)
	fixtures  = os.Getenv("E2E_FIXTURES")     // hack/attackfixtures' output (hostile CTF)
	repoRoot  = os.Getenv("E2E_REPO_ROOT")    // the product repository
	keepLogs  = os.Getenv("E2E_KEEP") != ""   // keep the work directory (logs) after the run
	inNetns   = os.Getenv("E2E_NETNS") == "1" // set for the re-executed test binary
)

// The whole run lives in private network, PID and mount namespaces: every
// listener (the application-controller's metrics bind 0.0.0.0) is on a
// loopback nobody else can reach, nothing can reach an address outside
// 127.0.0.0/8, and when the test binary (PID 1 there) ends, the kernel kills
// every process it started, whatever happened.
func TestMain(m *testing.M) {
	if e2eBin == "" || pluginBin == "" || argoDir == "" || fixtures == "" || repoRoot == "" {
		fmt.Fprintln(os.Stderr, "e2e: SKIPPED: E2E_BIN, E2E_PLUGIN_BIN, E2E_ARGOCD_DIR, E2E_FIXTURES and E2E_REPO_ROOT unset: run `make e2e` from the repository's root")
		os.Exit(0)
	}
	if !inNetns {
		os.Exit(reexecInNamespaces())
	}
	if err := loopbackOnly(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	start := time.Now()
	var err error
	if cl, err = newCluster(); err == nil {
		err = cl.up()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: start-up failed:", err)
		if cl != nil {
			for _, n := range cl.down() {
				fmt.Fprintln(os.Stderr, "e2e:", n)
			}
		}
		return 1
	}
	fmt.Fprintf(os.Stderr, "e2e: everything up in %s:", time.Since(start).Round(100*time.Millisecond))
	for k, v := range cl.startup {
		fmt.Fprintf(os.Stderr, " %s %s;", k, v.Round(100*time.Millisecond))
	}
	fmt.Fprintln(os.Stderr)
	code := m.Run()

	fmt.Fprintln(os.Stderr, "e2e: memory (VmRSS from /proc, process trees):")
	for _, l := range cl.memory() {
		fmt.Fprintln(os.Stderr, "  "+l)
	}
	if m, err := cl.metrics(); err == nil && m["argocd_ocm_generation_seconds_count"] > 0 {
		fmt.Fprintf(os.Stderr, "e2e: render server: %v generations, %.0f ms per generation on average (arrival to result), queue %.0f ms on average; outcomes:",
			m["argocd_ocm_generation_seconds_count"], 1000*m["argocd_ocm_generation_seconds_sum"]/m["argocd_ocm_generation_seconds_count"],
			1000*m["argocd_ocm_queue_seconds_sum"]/m["argocd_ocm_generation_seconds_count"])
		for k, v := range m {
			if strings.HasPrefix(k, "argocd_ocm_generations_total") || strings.HasPrefix(k, "argocd_ocm_worker_kills_total") {
				fmt.Fprintf(os.Stderr, " %s=%v", k, v)
			}
		}
		fmt.Fprintln(os.Stderr)
	}
	if s := cl.served(); len(s.okMs) > 0 {
		ms := slices.Clone(s.okMs)
		slices.Sort(ms)
		fmt.Fprintf(os.Stderr, "e2e: sidecar log: %d generations answered by the render server, %d refused; successful ones: %d, median %d ms, max %d ms (arrival to result)\n",
			s.answered, s.refused, len(ms), ms[len(ms)/2], ms[len(ms)-1])
	}
	fmt.Fprintln(os.Stderr, "e2e: report:")
	for _, l := range report {
		fmt.Fprintln(os.Stderr, "  "+l)
	}
	for _, n := range cl.down() {
		fmt.Fprintln(os.Stderr, "e2e:", n)
	}
	fmt.Fprintf(os.Stderr, "e2e: took %s in all\n", time.Since(start).Round(100*time.Millisecond))
	return code
}

func reexecInNamespaces() int {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	args := append([]string{"--net", "--pid", "--fork", "--mount", "--mount-proc", "--kill-child", "--", self}, os.Args[1:]...)
	cmd := exec.Command("unshare", args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "E2E_NETNS=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		fmt.Fprintln(os.Stderr, "e2e: unshare (needs root):", err)
		return 1
	}
	return 0
}

// loopbackOnly brings lo up and checks it is the only interface, with
// loopback addresses only.
func loopbackOnly() error {
	if out, err := exec.Command("ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
		return fmt.Errorf("ip link set lo up: %v: %s", err, out)
	}
	out, err := exec.Command("ip", "-o", "addr").CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip -o addr: %v: %s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || f[1] != "lo" || !(strings.HasPrefix(f[3], "127.") || f[3] == "::1/128") {
			return fmt.Errorf("the private network namespace has more than loopback: %s", out)
		}
	}
	links, _ := exec.Command("ip", "-o", "link").CombinedOutput()
	if n := bytes.Count(bytes.TrimSpace(links), []byte("\n")) + 1; n != 1 {
		return fmt.Errorf("%d network interfaces in the private namespace, want lo only: %s", n, links)
	}
	return nil
}

func path(dir string, elem ...string) string { return filepath.Join(append([]string{dir}, elem...)...) }
