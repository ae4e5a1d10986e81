package registry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"syscall"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

// EnvAllowAddresses lists what an Application may make the sidecar connect
// to beyond the default (package policy reads it; the policy file's
// allowAddresses says the same).
const EnvAllowAddresses = "ARGOCD_OCM_ALLOW_ADDRESSES"

// AddressPolicy decides which addresses a client connects to on an
// Application's behalf. It is checked on the address actually dialled, after
// name resolution (a name resolving to 127.0.0.1 is refused like 127.0.0.1),
// for every connection: registries, Helm repositories, chart URLs, redirects
// and mirrors.
//
// Refused unless allowed: loopback, the pod's own interface addresses (its
// eth0's IPv4 and IPv6 addresses and any other interface's, read again when
// they change: see localAddrs), link-local (169.254.0.0/16 with the
// cloud metadata address, fe80::/10), unspecified, "this network"
// (0.0.0.0/8), multicast and broadcast addresses, the other metadata
// addresses (fd00:ec2::254, 100.100.100.200), and IPv6 forms that embed one of
// these (IPv4-mapped, NAT64 64:ff9b::/96). These reach the pod itself (Argo
// CD's repo-server ports share its network namespace) or the node's cloud
// metadata. Private ranges stay allowed: in-cluster registries live there.
type AddressPolicy struct {
	nets  []netip.Prefix
	hosts map[string]bool // canonical host or host:port the operator named
	local *localAddrs     // the interface addresses; nil: the process's
}

// NewAddressPolicy allows, beyond the default, each entry: an IP address, a
// CIDR range, a host name (any port) or host:port.
func NewAddressPolicy(allow ...string) (*AddressPolicy, error) {
	p := &AddressPolicy{hosts: map[string]bool{}}
	for _, a := range allow {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		if pfx, err := netip.ParsePrefix(a); err == nil {
			p.nets = append(p.nets, pfx.Masked())
			continue
		}
		if ip, err := netip.ParseAddr(strings.Trim(a, "[]")); err == nil {
			p.nets = append(p.nets, netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen()))
			continue
		}
		if strings.ContainsAny(a, "/@ *?\\") || strings.Contains(a, "://") {
			return nil, fmt.Errorf("%w: allowed address %s: want an IP address, a CIDR range, a host or host:port", errdef.ErrInvalidInput, errdef.Quote(a))
		}
		p.hosts[CanonicalHost(a)] = true
	}
	return p, nil
}

// key identifies the policy for sharing transports between clients.
func (p *AddressPolicy) key() string {
	if p == nil {
		return "any"
	}
	var parts []string
	for _, n := range p.nets {
		parts = append(parts, n.String())
	}
	for h := range p.hosts {
		parts = append(parts, h)
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

func (p *AddressPolicy) hostAllowed(host, port string) bool {
	host = CanonicalHost(host)
	return p.hosts[host] || p.hosts[CanonicalHost(net.JoinHostPort(host, port))]
}

// Allowed reports whether ip may be dialled, and what kind of address it is
// when not.
func (p *AddressPolicy) Allowed(ip netip.Addr) (ok bool, kind string) {
	ip = ip.Unmap().WithZone("")
	kind = specialAddress(ip)
	if kind == "" && p.ownAddress(ip) {
		kind = "local interface" // the pod's own: it reaches the pod as the loopback does
	}
	if kind == "" {
		return true, ""
	}
	for _, n := range p.nets {
		if n.Contains(ip) {
			return true, ""
		}
	}
	return false, kind
}

// ownAddress reports whether ip is one of the pod's interface addresses,
// also embedded in a NAT64 address.
func (p *AddressPolicy) ownAddress(ip netip.Addr) bool {
	local := p.local
	if local == nil {
		local = ownAddresses
	}
	if nat64.Contains(ip) {
		b := ip.As16()
		if local.contains(netip.AddrFrom4([4]byte(b[12:]))) {
			return true
		}
	}
	return local.contains(ip)
}

var (
	nat64       = netip.MustParsePrefix("64:ff9b::/96")
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")
	metadata    = []netip.Addr{netip.MustParseAddr("fd00:ec2::254"), netip.MustParseAddr("100.100.100.200")}
	broadcast   = netip.MustParseAddr("255.255.255.255")
)

// specialAddress names the kind of address ip is when the default refuses it.
func specialAddress(ip netip.Addr) string {
	if nat64.Contains(ip) {
		b := ip.As16()
		if kind := specialAddress(netip.AddrFrom4([4]byte(b[12:]))); kind != "" {
			return kind + " (NAT64)"
		}
	}
	switch {
	case ip.IsLoopback():
		return "loopback"
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return "link-local"
	case ip.IsUnspecified(), ip.Is4() && thisNetwork.Contains(ip):
		return "unspecified"
	case ip.IsMulticast(), ip.IsInterfaceLocalMulticast(), ip == broadcast:
		return "multicast"
	case slices.Contains(metadata, ip):
		return "metadata"
	}
	return ""
}

// errAddressRefused is what the dialer's check returns; wrapError turns it
// into an ErrForbidden error that names the host, never what listens there.
type errAddressRefused struct{ kind string }

func (e *errAddressRefused) Error() string {
	return fmt.Sprintf("it resolves to a %s address, which Applications may not reach (the operator can allow it: %s or the sidecar policy's allowAddresses)", e.kind, EnvAllowAddresses)
}

func (e *errAddressRefused) Is(target error) bool { return target == errdef.ErrForbidden }

// dialContext dials through d, refusing addresses p does not allow. A host
// the operator named is dialled whatever it resolves to.
func (p *AddressPolicy) dialContext(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if p == nil {
		return d.DialContext
	}
	checked := *d
	checked.Control = func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return &errAddressRefused{kind: "unparsable"}
		}
		if ok, kind := p.Allowed(ap.Addr()); !ok {
			return &errAddressRefused{kind: kind}
		}
		return nil
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if host, port, err := net.SplitHostPort(addr); err == nil && p.hostAllowed(host, port) {
			return d.DialContext(ctx, network, addr)
		}
		return checked.DialContext(ctx, network, addr)
	}
}

// addressRefused finds the dialer's refusal in err.
func addressRefused(err error) (*errAddressRefused, bool) {
	var r *errAddressRefused
	return r, errors.As(err, &r)
}
