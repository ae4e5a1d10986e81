package registrytest

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
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

// OwnAddress is a listener on one of the machine's own interface addresses
// (what a pod's own IP is to the sidecar) that counts the connections it
// accepts and closes them.
type OwnAddress struct {
	IP       netip.Addr
	Addr     string // host:port
	Accepted *atomic.Int32
}

// OwnAddresses listens on each of the machine's interface addresses besides
// the loopback and link-local ones until the test ends. When there is none
// to listen on, it skips the test, saying so.
func OwnAddresses(t testing.TB) []OwnAddress {
	t.Helper()
	as, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var own []OwnAddress
	for _, a := range as {
		n, ok := a.(*net.IPNet)
		if !ok || n.IP.IsLoopback() || n.IP.IsLinkLocalUnicast() {
			continue
		}
		ip, _ := netip.AddrFromSlice(n.IP)
		l, err := net.Listen("tcp", net.JoinHostPort(n.IP.String(), "0"))
		if err != nil {
			t.Logf("%s: cannot listen: %v", n.IP, err)
			continue
		}
		o := OwnAddress{IP: ip.Unmap(), Accepted: new(atomic.Int32)}
		o.Addr = serve(t, l, func(c net.Conn) { o.Accepted.Add(1); c.Close() })
		own = append(own, o)
	}
	if len(own) == 0 {
		t.Skip("no interface address besides loopback and link-local to listen on")
	}
	return own
}

// serveLoopback listens on the loopback until the test ends and hands every
// connection to handle; it returns host:port.
func serveLoopback(t testing.TB, handle func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serve(t, l, handle)
}

// serve hands every connection l accepts to handle until the test ends; it
// returns l's host:port.
func serve(t testing.TB, l net.Listener, handle func(net.Conn)) string {
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
