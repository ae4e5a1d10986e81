package registry

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/imageref"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
)

func TestSpecialAddresses(t *testing.T) {
	p, err := NewAddressPolicy()
	if err != nil {
		t.Fatal(err)
	}
	for addr, want := range map[string]string{
		"127.0.0.1": "loopback", "127.1.2.3": "loopback", "::1": "loopback", "::ffff:127.0.0.1": "loopback",
		"169.254.169.254": "link-local", "169.254.1.1": "link-local", "fe80::1": "link-local",
		"0.0.0.0": "unspecified", "0.1.2.3": "unspecified", "::": "unspecified",
		"224.0.0.1": "link-local", "239.1.1.1": "multicast", "ff02::1": "link-local", "ff05::1": "multicast", "255.255.255.255": "multicast",
		"fd00:ec2::254": "metadata", "100.100.100.200": "metadata",
		"64:ff9b::7f00:1": "loopback (NAT64)", "64:ff9b::a9fe:a9fe": "link-local (NAT64)",
		// Private ranges and public addresses stay reachable.
		"10.0.0.1": "", "172.16.5.4": "", "192.168.1.1": "", "8.8.8.8": "", "2001:db8::1": "", "fd12::1": "", "64:ff9b::808:808": "",
	} {
		ok, kind := p.Allowed(netip.MustParseAddr(addr))
		if kind != want || ok != (want == "") {
			t.Errorf("%s: allowed %v kind %q, want kind %q", addr, ok, kind, want)
		}
	}
	allow, err := NewAddressPolicy("127.0.0.0/8", "::1", " ", "registry.internal:5000")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"127.0.0.1", "127.9.9.9", "::1", "::ffff:127.0.0.2"} {
		if ok, _ := allow.Allowed(netip.MustParseAddr(a)); !ok {
			t.Errorf("%s refused though allowed", a)
		}
	}
	if ok, _ := allow.Allowed(netip.MustParseAddr("169.254.169.254")); ok {
		t.Error("an allowance of the loopback let the metadata address through")
	}
	if !allow.hostAllowed("Registry.Internal", "5000") || allow.hostAllowed("registry.internal", "5001") {
		t.Error("host:port allowance")
	}
	for _, bad := range []string{"http://x", "a b", "*.corp", "x/y"} {
		if _, err := NewAddressPolicy(bad); !errors.Is(err, errdef.ErrInvalidInput) {
			t.Errorf("NewAddressPolicy(%q): %v", bad, err)
		}
	}
}

// resolveVia resolves a tag at host with client c and returns the wrapped error.
func resolveVia(t *testing.T, c *Client, host string) error {
	t.Helper()
	ref := imageref.Reference{Registry: host, Repository: "internal/x", Tag: "v1"}
	repo, err := c.Repository(ref)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = repo.Resolve(ctx, "v1")
	return c.Wrap(err, "resolve", ref)
}

// With special addresses refused, nothing on the loopback is connected to,
// by address or by a name that resolves there, and the refusal reads the
// same whatever listens.
func TestSpecialAddressesRefusedBeforeConnecting(t *testing.T) {
	var msgs []string
	var total atomic.Int32
	for _, mode := range []string{"banner", "tls", "close"} {
		addr, n := registrytest.CountingListener(t, mode)
		_, port, _ := net.SplitHostPort(addr)
		for _, host := range []string{addr, "localhost:" + port} {
			c, err := NewClient(WithoutDockerConfig(), WithRetries(0), WithSpecialAddressesRefused())
			if err != nil {
				t.Fatal(err)
			}
			err = resolveVia(t, c, host)
			if !errors.Is(err, errdef.ErrForbidden) || !strings.Contains(err.Error(), "loopback address") {
				t.Errorf("%s (%s): %v, want a refusal of the loopback", host, mode, err)
				continue
			}
			msgs = append(msgs, strings.ReplaceAll(err.Error(), host, "HOST"))
		}
		total.Add(n.Load())
	}
	if total.Load() != 0 {
		t.Errorf("%d connections were made to refused addresses", total.Load())
	}
	for _, m := range msgs[1:] {
		if m != msgs[0] {
			t.Errorf("refusals differ:\n%s\n%s", msgs[0], m)
		}
	}
	// The operator's allowance lets the same connection through.
	addr, n := registrytest.CountingListener(t, "close")
	c, err := NewClient(WithoutDockerConfig(), WithRetries(0), WithSpecialAddressesRefused("127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := resolveVia(t, c, addr); errors.Is(err, errdef.ErrForbidden) || n.Load() == 0 {
		t.Errorf("allowed loopback: %v, %d connections", err, n.Load())
	}
}

// Whatever answers (nothing, a banner, TLS with an unknown CA, plain HTTP,
// a malformed HTTP status line), a failed connection reads the same and
// quotes nothing the other side sent.
func TestConnectionErrorsReadTheSame(t *testing.T) {
	closed := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		a := l.Addr().String()
		l.Close()
		return a
	}()
	banner, _ := registrytest.CountingListener(t, "banner")
	tlsSrv, _ := registrytest.CountingListener(t, "tls")
	plain := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(plain.Close)
	malformed := registrytest.Replying(t, "HTTP/1.1 internal-banner-XYZ\r\n\r\n")
	var msgs []string
	for name, host := range map[string]string{
		"closed": closed, "banner": banner, "tls": tlsSrv,
		"plain": strings.TrimPrefix(plain.URL, "http://"), "malformed": malformed,
	} {
		c, err := NewClient(WithoutDockerConfig(), WithRetries(0), WithSpecialAddressesRefused("127.0.0.1"))
		if err != nil {
			t.Fatal(err)
		}
		err = resolveVia(t, c, host)
		if err == nil {
			t.Fatalf("%s: no error", name)
		}
		m := strings.ReplaceAll(err.Error(), host, "HOST")
		for _, leak := range []string{"SSH", "banner", "XYZ", "x509", "certificate", "connect:", "HTTP response", "EOF", "malformed"} {
			if strings.Contains(m, leak) {
				t.Errorf("%s: %q quotes %q", name, m, leak)
			}
		}
		msgs = append(msgs, m)
	}
	for _, m := range msgs[1:] {
		if m != msgs[0] {
			t.Errorf("connection errors differ:\n%s\n%s", msgs[0], m)
		}
	}
}

// The pod's own interface addresses are refused like the loopback (issue
// 35: `repository: http://<eth0's address>:PORT/x` was dialled), unless the
// operator allows them, and the set follows the interfaces' changes.
func TestOwnInterfaceAddressesRefused(t *testing.T) {
	addrs := []string{"10.1.2.3/24", "fd00::5/64"}
	var changed func()
	local := &localAddrs{
		list: func() ([]net.Addr, error) {
			var out []net.Addr
			for _, a := range addrs {
				pfx := netip.MustParsePrefix(a)
				out = append(out, &net.IPNet{IP: pfx.Addr().AsSlice(), Mask: net.CIDRMask(pfx.Bits(), pfx.Addr().BitLen())})
			}
			return out, nil
		},
		watch: func(c, _ func()) bool { changed = c; return true },
	}
	p := &AddressPolicy{hosts: map[string]bool{}, local: local}
	for addr, want := range map[string]string{
		"10.1.2.3": "local interface", "::ffff:10.1.2.3": "local interface", "fd00::5": "local interface", "64:ff9b::a01:203": "local interface",
		"10.1.2.4": "", "fd00::6": "", // other pods of the subnet
	} {
		if ok, kind := p.Allowed(netip.MustParseAddr(addr)); kind != want || ok != (want == "") {
			t.Errorf("%s: allowed %v kind %q, want kind %q", addr, ok, kind, want)
		}
	}
	// An address added later is refused once the watcher says so; one
	// removed is reachable again.
	addrs = []string{"10.9.9.9/24"}
	changed()
	if ok, _ := p.Allowed(netip.MustParseAddr("10.9.9.9")); ok {
		t.Error("an address added to an interface is allowed")
	}
	if ok, _ := p.Allowed(netip.MustParseAddr("10.1.2.3")); !ok {
		t.Error("an address removed from the interfaces is still refused")
	}
	// The operator's allowance.
	allow, err := NewAddressPolicy("10.9.9.9")
	if err != nil {
		t.Fatal(err)
	}
	allow.local = local
	if ok, _ := allow.Allowed(netip.MustParseAddr("10.9.9.9")); !ok {
		t.Error("an allowed own address is refused")
	}
	// Without a watcher the set is read again after localAddrsMaxAge.
	unwatched := &localAddrs{list: local.list, watch: func(_, _ func()) bool { return false }}
	if !unwatched.contains(netip.MustParseAddr("10.9.9.9")) {
		t.Fatal("unwatched set")
	}
	addrs = []string{"10.7.7.7/24"}
	unwatched.read = time.Now().Add(-2 * localAddrsMaxAge)
	if !unwatched.contains(netip.MustParseAddr("10.7.7.7")) {
		t.Error("an unwatched set is not read again once old")
	}
}

// This machine's own non-loopback addresses, IPv4 and IPv6, each with a
// listener on all interfaces: refused before connecting, with the same
// message whatever listens, and reachable when the operator allows them.
// The real watcher (netlink) is running.
func TestOwnAddressesRefusedBeforeConnecting(t *testing.T) {
	var msgs []string
	for _, o := range registrytest.OwnAddresses(t) {
		ip, host := o.IP, o.Addr
		c, err := NewClient(WithoutDockerConfig(), WithRetries(0), WithSpecialAddressesRefused())
		if err != nil {
			t.Fatal(err)
		}
		err = resolveVia(t, c, host)
		if !errors.Is(err, errdef.ErrForbidden) || !strings.Contains(err.Error(), "local interface address") {
			t.Errorf("%s: %v, want a refusal of the pod's own address", host, err)
		}
		msgs = append(msgs, strings.ReplaceAll(err.Error(), host, "HOST"))
		allowed, err := NewClient(WithoutDockerConfig(), WithRetries(0), WithSpecialAddressesRefused(ip.String()))
		if err != nil {
			t.Fatal(err)
		}
		if err := resolveVia(t, allowed, host); errors.Is(err, errdef.ErrForbidden) {
			t.Errorf("%s allowed by the operator: %v", host, err)
		}
		if n := o.Accepted.Load(); n != 1 {
			t.Errorf("%s: %d connections, want only the allowed one", host, n)
		}
		t.Logf("%s refused: %s", ip, msgs[len(msgs)-1])
	}
	for _, m := range msgs[1:] {
		if m != msgs[0] {
			t.Errorf("refusals differ:\n%s\n%s", msgs[0], m)
		}
	}
}

// BenchmarkLocalAddrsRead is what one read of the interface addresses
// costs (localAddrsMaxAge: how often an unwatched set is read again).
func BenchmarkLocalAddrsRead(b *testing.B) {
	l := &localAddrs{list: net.InterfaceAddrs}
	for b.Loop() {
		l.refresh()
	}
}
