//go:build !linux

package server

import "net"

// checkPeer relies on the socket's mode where the system has no SO_PEERCRED.
func checkPeer(net.Conn) error { return nil }
