package registry

import (
	"errors"
	"os"
	"syscall"
)

// The netlink multicast groups of address changes (linux/rtnetlink.h).
const (
	rtmgrpIPv4IfAddr = 0x10
	rtmgrpIPv6IfAddr = 0x100
)

// watchAddressChanges subscribes to the kernel's address changes (netlink,
// RTMGRP_IPV4_IFADDR and RTMGRP_IPV6_IFADDR: no privilege needed) and calls
// changed on each message, from a goroutine that waits in the runtime's
// poller (no thread of its own), and ended if the socket fails. False when
// the socket cannot be opened.
func watchAddressChanges(changed, ended func()) bool {
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC|syscall.SOCK_NONBLOCK, syscall.NETLINK_ROUTE)
	if err != nil {
		return false
	}
	sa := &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK, Groups: rtmgrpIPv4IfAddr | rtmgrpIPv6IfAddr}
	if err := syscall.Bind(fd, sa); err != nil {
		syscall.Close(fd)
		return false
	}
	f := os.NewFile(uintptr(fd), "netlink-ifaddr")
	go func() {
		defer f.Close()
		buf := make([]byte, 8<<10)
		for {
			_, err := f.Read(buf)
			// A message, or an overrun (ENOBUFS: messages were lost):
			// either way the set may have changed.
			changed()
			if err != nil && !errors.Is(err, syscall.ENOBUFS) && !errors.Is(err, syscall.EINTR) {
				ended()
				return
			}
		}
	}()
	return true
}
