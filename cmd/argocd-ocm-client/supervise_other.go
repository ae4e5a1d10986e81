//go:build !linux

package main

import (
	"fmt"
	"os"
	"syscall"
)

// superviseGenerate: without a parent-death signal a child could outlive
// this process, so the plugin replaces it, with the polled memory limit of
// a process of its own (see supervise_linux.go).
func superviseGenerate(bin string, args []string) int {
	err := syscall.Exec(bin, append([]string{"argocd-ocm-plugin"}, args...), os.Environ())
	fmt.Fprintf(os.Stderr, "argocd-ocm-client: %v\n", err)
	return 1
}
