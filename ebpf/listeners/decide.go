package listeners

import "net/netip"

// Scores mirror the kernel's listener lookup (net/ipv4/inet_hashtables.c):
// a listener bound to the exact destination wins over a wildcard one, and
// for IPv4 an AF_INET socket wins over an AF_INET6 one of the same tier.
const (
	noMatch        = -1
	wildcard6      = 0
	wildcard4      = 1
	exact6         = 2
	exact4         = 3
	deviceBoundBit = 1 << 8 // set when an address match is device-bound
)

// score says how well l matches a connect to dst (already unmapped), or
// noMatch if the kernel would not hand it the SYN.
func score(l *Listener, dst netip.Addr) int {
	s := addrScore(l, dst)
	if s != noMatch && l.BoundDev != 0 {
		s |= deviceBoundBit
	}
	return s
}

func addrScore(l *Listener, dst netip.Addr) int {
	if dst.Is4() {
		return score4(l, dst)
	}
	if !l.inet6() || l.Addr.Is4In6() {
		return noMatch
	}
	switch {
	case l.Addr == dst:
		return exact6
	case l.Addr.IsUnspecified():
		return wildcard6
	}
	return noMatch
}

// score4 matches an IPv4 destination: AF_INET sockets directly, AF_INET6
// ones through the v4-mapped address or `::` unless IPV6_V6ONLY is set.
func score4(l *Listener, dst netip.Addr) int {
	if !l.inet6() {
		switch {
		case l.Addr == dst:
			return exact4
		case l.Addr.IsUnspecified():
			return wildcard4
		}
		return noMatch
	}
	if l.V6Only {
		return noMatch
	}
	a := l.Addr
	if a.Is4In6() {
		a = a.Unmap()
	}
	switch {
	case a == dst:
		return exact6
	case a.IsUnspecified():
		return wildcard6
	}
	return noMatch
}

// decide is the verdict for dst among ls, the listeners of one port. With
// fresh set, queue lengths were just read and are trusted; otherwise a full
// flag or an unwatched candidate asks for a refresh.
func decide(ls []*Listener, dst netip.Addr, unresolved, fresh bool) Verdict {
	dst = dst.Unmap()
	best := noMatch
	for _, l := range ls {
		s := score(l, dst)
		if s != noMatch && s&deviceBoundBit != 0 {
			return Undecided
		}
		best = max(best, s)
	}
	switch {
	case best == noMatch && unresolved:
		return Undecided
	case best == noMatch:
		return Refused
	}
	return queueVerdict(ls, dst, best, fresh)
}

// queueVerdict looks at the accept queues of the listeners that would get
// the SYN: all open → Reachable, all full → QueueFull, mixed → Undecided
// (SO_REUSEPORT picks one by hash).
func queueVerdict(ls []*Listener, dst netip.Addr, best int, fresh bool) Verdict {
	var open, full int
	for _, l := range ls {
		if score(l, dst) != best {
			continue
		}
		switch {
		case fresh && l.Queue > l.Backlog:
			full++
		case fresh:
			open++
		case l.Full || l.SK == 0 || len(ls) > MaxWatched:
			return CheckQueue
		default:
			open++
		}
	}
	switch {
	case full == 0:
		return Reachable
	case open == 0:
		return QueueFull
	}
	return Undecided
}
