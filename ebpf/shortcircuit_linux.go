package ebpf

import (
	"context"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/probelet/probelet/ebpf/listeners"
	"github.com/probelet/probelet/ebpf/tracker"
	"github.com/probelet/probelet/prober/probe"
)

// linuxSC is the short-circuit: the eBPF tracker's table, the namespace
// path cache, and sock_diag for what events alone cannot settle.
type linuxSC struct {
	cfg   scConfig
	tr    *tracker.Tracker
	table *listeners.Table
	paths *pathCache

	diagMu   sync.Mutex  // one sock_diag query at a time; guards dumps
	dumps    uint64      // sock_diag dumps tried (tests read it)
	passes   uint64      // reconcile passes, for the loop only
	diagOff  atomic.Bool // sock_diag unusable (no CAP_SYS_ADMIN): trust the snapshot
	diagOnce sync.Once
	lastLost uint64

	stop, done     chan struct{}
	afterReconcile atomic.Pointer[func()] // test hook, run after each pass
}

var _ shortCircuit = (*linuxSC)(nil)

func newShortCircuit(ctx context.Context, cfg scConfig) (shortCircuit, error) {
	tr, err := tracker.New(ctx, tracker.WithLogger(cfg.log), tracker.WithFeatures(cfg.features))
	if err != nil {
		return nil, err
	}
	s := &linuxSC{
		cfg: cfg, tr: tr, table: tr.Table(), paths: newPathCache(),
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	// The ticker exists before New returns, so a fake clock can be stepped
	// at once.
	go s.loop(cfg.clock.NewTicker(cfg.interval))
	return s, nil
}

// answer maps the table's verdict to a probe result with the dial's words.
func (s *linuxSC) answer(t probe.TCPTarget) (probe.Result, string, string, bool) {
	dst, ino, reason, ok := s.locate(t)
	if !ok {
		return "", "", reason, false
	}
	return verdictResult(s.decide(t.NetNSPath, ino, dst, uint16(t.Port)), dst, t.Port)
}

// instant is answer without sock_diag: only a verdict the table reaches on
// its own (decide would return it unchanged) is an answer.
func (s *linuxSC) instant(t probe.TCPTarget) (probe.Result, string, bool) {
	dst, ino, _, ok := s.locate(t)
	if !ok {
		return "", "", false
	}
	switch v := s.table.Lookup(ino, dst, uint16(t.Port)); v {
	case listeners.Reachable, listeners.Refused, listeners.QueueFull:
		res, out, _, ok := verdictResult(v, dst, t.Port)
		return res, out, ok
	}
	return "", "", false
}

// locate finds the target's destination address and namespace inode; ok
// false (with a reason for the metrics) means the table cannot answer.
func (s *linuxSC) locate(t probe.TCPTarget) (dst netip.Addr, ino uint32, reason string, ok bool) {
	if !t.InPod {
		return dst, 0, "not-in-pod", false
	}
	if s.tr.Stale() {
		return dst, 0, "tracker-stopped", false
	}
	if t.NetNSPath == "" {
		return dst, 0, "no-netns", false
	}
	dst, err := netip.ParseAddr(t.Host)
	if err != nil || dst.Zone() != "" {
		return dst, 0, "not-ip", false
	}
	ino, err = s.paths.inode(t.NetNSPath, s.table)
	if err != nil {
		return dst, 0, "netns-gone", false
	}
	return dst, ino, "", true
}

// verdictResult words a verdict as a dial would; ok false (with the
// verdict as the reason) means only a dial can tell.
func verdictResult(v listeners.Verdict, dst netip.Addr, port int) (probe.Result, string, string, bool) {
	switch v {
	case listeners.Reachable:
		return probe.Success, "", "", true
	case listeners.Refused:
		return probe.Failure, refusedOutput(dst, port), "", true
	case listeners.QueueFull:
		return probe.Failure, timeoutOutput(dst, port), "", true
	}
	return "", "", v.String(), false
}

// decide asks the table and, when it cannot answer from memory, settles it
// with sock_diag: a namespace never confirmed, an accept queue that may be
// full, a listen() whose port is still unknown.
func (s *linuxSC) decide(path string, ino uint32, dst netip.Addr, port uint16) listeners.Verdict {
	v := s.table.Lookup(ino, dst, port)
	if v == listeners.Unverified {
		fresh, ok := s.verify(path, ino)
		switch {
		case !ok:
			return v
		case fresh:
			return s.table.LookupFresh(ino, dst, port)
		}
		v = s.table.Lookup(ino, dst, port)
	}
	if v == listeners.CheckQueue || (v == listeners.Undecided && s.table.Portless(ino)) {
		if !s.reconcileNS(path, ino) {
			return listeners.Undecided
		}
		v = s.table.LookupFresh(ino, dst, port)
	}
	return v
}

// verify confirms a namespace's listeners the first time it is probed.
// fresh reports that queue lengths were just read too. Without sock_diag
// the snapshot and the events are trusted.
func (s *linuxSC) verify(path string, ino uint32) (fresh, ok bool) {
	if s.reconcileNS(path, ino) {
		return true, true
	}
	if s.diagOff.Load() {
		s.table.MarkVerified(ino)
		return false, true
	}
	return false, false
}

func (s *linuxSC) sync(ctx context.Context) error { return s.tr.Sync(ctx) }

func (s *linuxSC) features() tracker.Features { return s.tr.Features() }

func (s *linuxSC) collectors() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "probelet_tcp_listeners",
			Help: "TCP listening sockets in the eBPF-fed listener table.",
		}, func() float64 { n, _ := s.table.Stats(); return float64(n) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "probelet_tcp_listener_events_lost_total",
			Help: "Listener events the kernel dropped because the ring buffer was full.",
		}, func() float64 { return float64(s.tr.Stats().Lost) }),
	}
}

func (s *linuxSC) close() error {
	close(s.stop)
	<-s.done
	return s.tr.Close()
}
