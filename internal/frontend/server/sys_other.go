//go:build unix && !linux

package server

import (
	"errors"
	"syscall"
)

func workerSysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func startOnSpawnThread(start func() error) error { return start() }

// privateRSS is not measured outside Linux: memory limits apply on Linux only.
func privateRSS(pid int) (int64, error) { return PrivateMemory(pid) }

// PrivateMemory is not measured outside Linux.
func PrivateMemory(int) (int64, error) { return 0, errors.ErrUnsupported }

func runQueueWait(int) (int64, bool) { return 0, false }

func waitsForLock(int, string) bool { return false }

func setAddressSpaceLimit(int, int64) (int64, error) { return 0, errors.ErrUnsupported }

func outOfMemory([]byte) bool { return false }

const arenaSlack = 64 << 20
