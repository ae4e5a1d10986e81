package server

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// Run (the plugin service in the server's process) gives a worker's result
// as it is, a limit's stop as one error line naming the Application, and
// counts both as a client's request counts.
func TestRunThroughThePool(t *testing.T) {
	p := testPool(t, &Pool{Size: 1, Deadline: 800 * time.Millisecond, Grace: 200 * time.Millisecond, MaxMemory: 96 << 20})
	m := NewMetrics()
	s := &Server{Pool: p, Metrics: m}
	env := []string{"ARGOCD_APP_NAME=shop"}
	res := s.Run(context.Background(), &Request{Args: []string{"echo", "hello"}, Env: env})
	if res.Exit != 0 || !strings.Contains(string(res.Stdout), "hello") {
		t.Fatalf("echo: %+v", res)
	}
	res = s.Run(context.Background(), &Request{Args: []string{"spin"}, Env: env})
	if res.Exit != 1 || len(res.Stdout) != 0 || string(res.Stderr) != "argocd-ocm-plugin: application shop: generation exceeded the deadline of 800ms (the render server stopped it): limit exceeded\n" {
		t.Fatalf("spin: exit %d, stdout %q, stderr %q", res.Exit, res.Stdout, res.Stderr)
	}
	if s.Running() != 0 {
		t.Fatalf("%d still running", s.Running())
	}
	var text strings.Builder
	_ = m.WriteText(&text)
	for _, want := range []string{`outcome="ok"} 1`, `outcome="deadline"} 1`} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("metrics lack %s:\n%s", want, text.String())
		}
	}
}

// Run refuses what Serve refuses: once the server drains, and past the
// request budget; the refusal is one error line, the command never runs.
func TestRunRefusals(t *testing.T) {
	ran := 0
	s := &Server{Handler: func(context.Context, *Request, io.Writer, io.Writer) int { ran++; return 0 }, RequestBudget: 1 << 10}
	big := &Request{Args: []string{"generate"}, Env: []string{"ARGOCD_APP_NAME=shop", "ARGOCD_ENV_X=" + strings.Repeat("x", 2<<10)}}
	if res := s.Run(context.Background(), big); res.Exit != 1 || !strings.HasPrefix(string(res.Stderr), "argocd-ocm-plugin: application shop: render failed: the render server holds 0 MiB") {
		t.Fatalf("over budget: %+v", res)
	}
	s.stopAdmitting()
	if res := s.Run(context.Background(), &Request{Args: []string{"generate"}}); res.Exit != 1 || !strings.Contains(string(res.Stderr), "shutting down") {
		t.Fatalf("draining: %+v", res)
	}
	if ran != 0 {
		t.Fatal("a refused request ran")
	}
}
