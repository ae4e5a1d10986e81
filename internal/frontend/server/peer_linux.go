package server

import (
	"fmt"
	"net"
	"os"
	"syscall"
)

// checkPeer refuses a client of another user (root excepted): the socket's
// mode already says so, this holds if a deployment loosens the directory.
func checkPeer(conn net.Conn) error {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return nil
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return err
	}
	var cred *syscall.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return err
	}
	if credErr != nil {
		return credErr
	}
	if uid := uint32(os.Getuid()); cred.Uid != uid && cred.Uid != 0 {
		return fmt.Errorf("peer uid %d is not the server's uid %d", cred.Uid, uid)
	}
	return nil
}
