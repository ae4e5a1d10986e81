//go:build unix

package main

import (
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// forwarded are the signals a supervisor passes on to its command.
var forwarded = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// supervise runs argv with env, forwards signals to it and returns its exit
// status (128+n when killed by signal n). As PID 1 of a container it also
// reaps orphans re-parented to it, as an init must (argocd-cmp-server's
// generate processes can leave some behind when Argo CD kills them).
//
// Once asked to stop (SIGTERM or SIGINT) it ends the command as stop says:
// argocd-cmp-server's first SIGTERM only removes its socket, so the
// supervisor repeats the signal until the command ends. A command ended by
// SIGTERM then stopped as asked: status 0.
func supervise(argv, env []string, stop stopPolicy) (int, error) {
	stop = stop.withDefaults()
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)
	pid1 := os.Getpid() == 1
	var chld chan os.Signal
	if pid1 {
		chld = make(chan os.Signal, 1)
		signal.Notify(chld, syscall.SIGCHLD)
		defer signal.Stop(chld)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = env, os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	var done chan struct{} // PID 1 learns the command's end from wait4 instead
	if !pid1 {
		done = make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
	}
	var stopping stopState
	var tick <-chan time.Time
	for {
		select {
		case s := <-sigs:
			_ = cmd.Process.Signal(s)
			if (s == syscall.SIGTERM || s == syscall.SIGINT) && stopping.begin(time.Now()) {
				t := time.NewTicker(100 * time.Millisecond)
				defer t.Stop()
				tick = t.C
			}
		case now := <-tick:
			switch stopping.next(now, stop) {
			case stepTerm:
				_ = cmd.Process.Signal(syscall.SIGTERM)
			case stepKill:
				_ = cmd.Process.Kill()
			}
		case <-done:
			return stopping.status(cmd.ProcessState.Sys().(syscall.WaitStatus)), nil
		case <-chld:
			// PID 1: reap every child; the command's own status ends the loop.
			for {
				var ws syscall.WaitStatus
				pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
				if err == syscall.EINTR {
					continue
				}
				if pid <= 0 || err != nil {
					break
				}
				if pid == cmd.Process.Pid {
					return stopping.status(ws), nil
				}
			}
		}
	}
}

// status is the command's exit status; ended by SIGTERM after a stop
// request, it stopped as asked: 0.
func (s *stopState) status(ws syscall.WaitStatus) int {
	if !s.began.IsZero() && ws.Signaled() && ws.Signal() == syscall.SIGTERM {
		return 0
	}
	return statusCode(ws)
}

func statusCode(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}
