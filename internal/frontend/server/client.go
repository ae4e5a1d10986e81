package server

import (
	"bufio"
	"context"
	"fmt"
	"net"
)

// Do sends req to the server listening on socket and returns the command's
// result.
//
// An error wrapping ErrUnavailable means the server did not take the request
// (nobody listening, another protocol or environment, shutting down, gone
// before it acknowledged the request): the caller can safely run the command
// itself. Once the server has acknowledged the request, every failure wraps
// ErrLost instead (the server died, ctx ended): the request may still be
// running, so the caller must report the failure and not run it again.
// Either way nothing the caller could print exists before a complete result.
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
	br := bufio.NewReaderSize(conn, 64<<10)
	h, err := readHeader(br)
	switch {
	case err != nil && ctx.Err() != nil:
		// The caller gave up; the server may have accepted the request
		// already: it must not be run again.
		return nil, fmt.Errorf("%w: %v", ErrLost, context.Cause(ctx))
	case err != nil:
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	case h.Refused != "":
		return nil, fmt.Errorf("%w: %s", ErrUnavailable, h.Refused)
	case !h.Accepted:
		return nil, fmt.Errorf("%w: malformed response: no acknowledgement", ErrUnavailable)
	}
	res, refused, err := readResult(br)
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, fmt.Errorf("%w: %v", ErrLost, context.Cause(ctx))
	case err != nil:
		return nil, fmt.Errorf("%w: %v", ErrLost, err)
	case refused != "":
		return nil, fmt.Errorf("%w: %s", ErrLost, refused)
	}
	return res, nil
}
