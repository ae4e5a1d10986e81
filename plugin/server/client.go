package server

import (
	"bufio"
	"context"
	"fmt"
	"net"
)

// Do sends req to the server listening on socket and returns the command's
// result. Any error is ErrUnavailable (wrapped, with the cause): until a
// complete result has arrived, nothing the caller could print exists.
//
// The connection stays open until the result arrives; closing it (the client
// being killed at Argo CD's deadline) cancels the render on the server.
func Do(ctx context.Context, socket string, req *Request) (*Result, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if err := writeRequest(conn, req); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	res, refused, err := readResult(bufio.NewReaderSize(conn, 64<<10))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if refused != "" {
		return nil, fmt.Errorf("%w: %s", ErrUnavailable, refused)
	}
	return res, nil
}
