package registrytest

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// CountingListener listens on the loopback and counts the connections it
// accepts, for tests that assert no connection was made. mode "banner"
// answers like an SSH server (a banner, then close), "tls" is a real TLS
// server, anything else closes at once. It returns host:port and the count.
func CountingListener(t testing.TB, mode string) (string, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	if mode == "tls" {
		srv := httptest.NewUnstartedServer(http.NotFoundHandler())
		srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				n.Add(1)
			}
		}
		srv.StartTLS()
		t.Cleanup(srv.Close)
		return strings.TrimPrefix(srv.URL, "https://"), &n
	}
	addr := serveLoopback(t, func(c net.Conn) {
		n.Add(1)
		if mode == "banner" {
			io.WriteString(c, "SSH-2.0-OpenSSH_9.6 secret-banner\r\n")
		}
		c.Close()
	})
	return addr, &n
}

// Replying listens on the loopback and answers every connection with reply
// once the client has sent something (a request), then closes it: a server
// that speaks something else than it is asked (a malformed HTTP status
// line, another protocol). It returns host:port.
func Replying(t testing.TB, reply string) string {
	t.Helper()
	return serveLoopback(t, func(c net.Conn) {
		go func() {
			defer c.Close()
			buf := make([]byte, 4096)
			_, _ = c.Read(buf)
			_, _ = io.WriteString(c, reply)
		}()
	})
}

// serveLoopback listens on the loopback until the test ends and hands every
// connection to handle; it returns host:port.
func serveLoopback(t testing.TB, handle func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			handle(c)
		}
	}()
	return l.Addr().String()
}
