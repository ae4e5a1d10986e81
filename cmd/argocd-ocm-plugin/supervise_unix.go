//go:build unix

package main

import (
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

// forwarded are the signals a supervisor passes on to its command.
var forwarded = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// supervise runs argv with env, forwards signals to it and returns its exit
// status (128+n when killed by signal n). As PID 1 of a container it also
// reaps orphans re-parented to it, as an init must (argocd-cmp-server's
// generate processes can leave some behind when Argo CD kills them).
func supervise(argv, env []string) (int, error) {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)
	pid1 := os.Getpid() == 1
	chld := make(chan os.Signal, 1)
	if pid1 {
		signal.Notify(chld, syscall.SIGCHLD)
		defer signal.Stop(chld)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = env, os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	if !pid1 {
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		for {
			select {
			case s := <-sigs:
				_ = cmd.Process.Signal(s)
			case <-done:
				return statusCode(cmd.ProcessState.Sys().(syscall.WaitStatus)), nil
			}
		}
	}
	// PID 1: reap every child; the command's own status ends the loop.
	for {
		select {
		case s := <-sigs:
			_ = cmd.Process.Signal(s)
		case <-chld:
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
					return statusCode(ws), nil
				}
			}
		}
	}
}

func statusCode(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}
