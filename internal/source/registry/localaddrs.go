package registry

import (
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// The pod's own interface addresses (eth0's IPv4 and IPv6, any other
// interface's) reach the pod itself as the loopback does: the repo-server's
// gRPC and metrics ports listen on all interfaces. AddressPolicy refuses
// them like the loopback (issue 35). The set is read from the kernel and
// read again when it changes: on Linux a netlink socket subscribed to
// address changes marks it stale (an address added after the subscription
// is never missed); elsewhere, or when the socket cannot be opened, it is
// read again when older than localAddrsMaxAge.
type localAddrs struct {
	mu    sync.Mutex
	addrs []netip.Addr
	read  time.Time
	// watched: a watcher marks the set stale on every change (until it
	// ends); stale: it did since the last read.
	watched atomic.Bool
	stale   atomic.Bool
	once    sync.Once
	// list reads the addresses (net.InterfaceAddrs; tests replace it).
	list func() ([]net.Addr, error)
	// watch starts a watcher calling changed on every change and ended if
	// it stops; false when none can run.
	watch func(changed, ended func()) bool
}

// localAddrsMaxAge bounds how old an unwatched set may be (a read costs
// 0.02-0.1 ms: BenchmarkLocalAddrsRead, 2 cores under load).
const localAddrsMaxAge = time.Second

// ownAddresses is the process's set: the kernel's state, one per process.
var ownAddresses = &localAddrs{list: net.InterfaceAddrs, watch: watchAddressChanges}

// contains reports whether ip is one of the interface addresses (loopback
// and link-local ones too, which specialAddress names first).
func (l *localAddrs) contains(ip netip.Addr) bool {
	l.once.Do(func() {
		// Subscribed before the first read: a change in between marks it
		// stale.
		l.watched.Store(true)
		if l.watch == nil || !l.watch(func() { l.stale.Store(true) }, func() { l.watched.Store(false) }) {
			l.watched.Store(false)
		}
		l.stale.Store(true)
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stale.Swap(false) || (!l.watched.Load() && time.Since(l.read) > localAddrsMaxAge) || l.read.IsZero() {
		l.refresh()
	}
	return slices.Contains(l.addrs, ip)
}

// refresh reads the addresses; l.mu is held. On an error the last set
// stays and the next check reads again.
func (l *localAddrs) refresh() {
	as, err := l.list()
	if err != nil {
		l.stale.Store(true)
		return
	}
	addrs := make([]netip.Addr, 0, len(as))
	for _, a := range as {
		var ip net.IP
		switch a := a.(type) {
		case *net.IPNet:
			ip = a.IP
		case *net.IPAddr:
			ip = a.IP
		}
		if addr, ok := netip.AddrFromSlice(ip); ok {
			addrs = append(addrs, addr.Unmap().WithZone(""))
		}
	}
	l.addrs, l.read = addrs, time.Now()
}
