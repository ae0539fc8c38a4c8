package ebpf

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
	"k8s.io/utils/clock"

	"github.com/probelet/probelet/ebpf/listeners"
	"github.com/probelet/probelet/ebpf/netns"
	"github.com/probelet/probelet/ebpf/sockdiag"
)

// syncTimeout bounds waiting for the event stream before a dump.
const syncTimeout = time.Second

// loop reconciles every probed namespace each interval.
func (s *linuxSC) loop(tk clock.Ticker) {
	defer close(s.done)
	defer tk.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tk.C():
			s.reconcileAll()
			if hook := s.afterReconcile.Load(); hook != nil {
				(*hook)()
			}
		}
	}
}

// safetyPasses: every this many passes, reconcileAll dumps settled
// namespaces too (with the default interval, every 5 minutes), in case the
// kernel changed a listener without an event the tracker sees.
const safetyPasses = 10

// reconcileAll compares the table with sock_diag for each namespace probed
// since the last pass whose listeners can have changed, and forgets
// namespaces that are gone or unprobed. A settled namespace (no listener
// added or removed since its last dump, no events lost) is skipped: its
// dump would cost a setns, a netlink socket and two dumps to find nothing.
func (s *linuxSC) reconcileAll() {
	s.checkLost()
	s.passes++
	all := s.passes%safetyPasses == 0
	for path, e := range s.paths.entries() {
		if !e.used.Swap(false) {
			s.paths.drop(path)
			continue
		}
		ino, err := netns.Inode(path)
		if err != nil {
			s.paths.drop(path)
			continue
		}
		if ino != e.ino {
			s.paths.set(path, ino).used.Store(true)
		}
		if all || !s.table.Settled(ino) {
			s.reconcileNS(path, ino)
		}
	}
	s.sweep()
}

// sweep drops the table's entries of namespaces without listeners that
// are no longer probed: those gone, and every other pod's once its
// listeners closed.
func (s *linuxSC) sweep() {
	probed := map[uint32]bool{}
	for _, e := range s.paths.entries() {
		probed[e.ino] = true
	}
	s.table.Sweep(func(ns uint32) bool { return probed[ns] })
}

// checkLost invalidates the table when the kernel dropped events: each
// namespace is then confirmed again before it is answered from.
func (s *linuxSC) checkLost() {
	lost := s.tr.Stats().Lost
	if lost <= s.lastLost {
		return
	}
	s.cfg.log.Warn("listener events were lost; re-confirming every namespace", zap.Uint64("lost", lost-s.lastLost))
	s.lastLost = lost
	s.table.Invalidate()
}

// reconcileNS makes the table's view of one namespace equal to a sock_diag
// dump, counting drift. It reports false when sock_diag cannot be used.
func (s *linuxSC) reconcileNS(path string, ino uint32) bool {
	if s.diagOff.Load() {
		return false
	}
	s.diagMu.Lock()
	defer s.diagMu.Unlock()
	s.dumps++
	// Apply every event from before the dump, so the dump and the table
	// disagree only about changes that race with it.
	ctx, cancel := context.WithTimeout(context.Background(), syncTimeout)
	defer cancel()
	if err := s.tr.Sync(ctx); err != nil {
		s.cfg.log.Debug("listener event sync failed", zap.Error(err))
		return false
	}
	since := s.table.Seq()
	socks, err := sockdiag.ListenersIn(path)
	if err != nil {
		s.diagFailed(path, err)
		return false
	}
	d := s.tr.Reconcile(ino, toListeners(socks, ino), since)
	s.cfg.metrics.drift.WithLabelValues("missing").Add(float64(d.Missing))
	s.cfg.metrics.drift.WithLabelValues("stale").Add(float64(d.Stale))
	if d.Count() != 0 {
		s.cfg.log.Debug("listener table drift repaired", zap.String("netns", path), zap.Int("missing", d.Missing), zap.Int("stale", d.Stale))
	}
	return true
}

// diagFailed turns sock_diag off for good when the agent lacks the
// privilege to enter namespaces; other failures (a namespace that just
// went away) only fail this query.
func (s *linuxSC) diagFailed(path string, err error) {
	if !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.EACCES) {
		s.cfg.log.Debug("sock_diag query failed", zap.String("netns", path), zap.Error(err))
		return
	}
	s.diagOff.Store(true)
	s.diagOnce.Do(func() {
		s.cfg.log.Warn("sock_diag unavailable (CAP_SYS_ADMIN is needed to enter pod namespaces); "+
			"TCP answers rely on the eBPF snapshot and events, full accept queues are left to a dial",
			zap.Error(err))
	})
}

func toListeners(socks []sockdiag.Socket, ino uint32) []listeners.Listener {
	out := make([]listeners.Listener, len(socks))
	for i, s := range socks {
		out[i] = listeners.Listener{
			Cookie: s.Cookie, NetNS: ino, Addr: s.Addr, Port: s.Port,
			BoundDev: s.BoundDev, V6Only: s.V6Only, Queue: s.Queue, Backlog: s.Backlog,
		}
	}
	return out
}
