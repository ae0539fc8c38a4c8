package tracker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/cilium/ebpf/rlimit"
	"go.uber.org/zap"

	"github.com/probelet/probelet/ebpf/listeners"
)

// Tracker owns the loaded eBPF objects and the table they feed.
type Tracker struct {
	log          *zap.Logger
	noListenExit bool
	listenExit   bool                    // sys_exit_listen is attached
	allowed      Features                // optional capabilities that may be used
	features     Features                // optional capabilities in use
	fault        func(step string) error // tests: fail a start-up step
	closeOnce    sync.Once
	closeErr     error

	table   *listeners.Table
	objs    trackerObjects
	links   []link.Link // in attach order; closed in reverse
	reader  *ringbuf.Reader
	done    chan struct{} // closed when the read loop has ended
	stopped atomic.Bool   // the read loop ended on an error: Table is stale
	stats   stats

	indexMu sync.Mutex

	syncMu  sync.Mutex
	syncSeq uint64
	waiters []waiter
}

// New loads and attaches the tracker, snapshots the listeners that already
// exist and returns once they are in Table. ctx bounds the start-up only.
// Without CAP_BPF and CAP_PERFMON (or BTF) it fails; errors.Is the result
// with ebpf.ErrNotSupported or unix.EPERM to tell why.
func New(ctx context.Context, opts ...Option) (*Tracker, error) {
	t := &Tracker{
		log: zap.NewNop(), allowed: AllFeatures, fault: func(string) error { return nil },
		table: listeners.NewTable(), done: make(chan struct{}),
	}
	for _, o := range opts {
		if err := o(t); err != nil {
			return nil, err
		}
	}
	if err := t.start(ctx); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// step is one stage of start-up.
type step struct {
	name string
	run  func() error
}

// steps is the fixed start-up order: memlock, load, attach the live hooks,
// open the ring buffer, then snapshot what existed before the hooks and
// wait until it is in the table.
func (t *Tracker) steps(ctx context.Context) []step {
	return []step{
		{"memlock", removeMemlock},
		{"load", t.load},
		{"attach", t.attach},
		{"ringbuf", t.openReader},
		{"snapshot", t.snapshot},
		{"sync", func() error { return t.Sync(ctx) }},
	}
}

func (t *Tracker) start(ctx context.Context) error {
	for _, s := range t.steps(ctx) {
		if err := t.fault(s.name); err != nil {
			return err
		}
		if err := s.run(); err != nil {
			return err
		}
	}
	return nil
}

func removeMemlock() error {
	if err := rlimit.RemoveMemlock(); err != nil {
		return fmt.Errorf("tracker: remove memlock limit: %w", err)
	}
	return nil
}

// gates are tracker.c's have_* constants and the capability each stands for.
var gates = map[string]Features{
	trackerVarHaveSockFromFile:   SockFromFile,
	trackerVarHaveTracingCookie:  TracingCookie,
	trackerVarHaveSnapshotCookie: SnapshotCookie,
}

// load probes the kernel's optional capabilities, sets tracker.c's have_*
// constants from them and loads the objects.
func (t *Tracker) load() error {
	spec, err := loadTracker()
	if err != nil {
		return fmt.Errorf("tracker: read eBPF objects: %w", err)
	}
	probed, err := kernelFeatures()
	if err != nil {
		t.log.Debug("kernel feature probe inconclusive; using the fallback path", zap.Error(err))
	}
	t.features = (probed & t.allowed).usable()
	for name, f := range gates {
		if err := spec.Variables[name].Set(t.features.Has(f)); err != nil {
			return fmt.Errorf("tracker: set %s: %w", name, err)
		}
	}
	if err := spec.LoadAndAssign(&t.objs, nil); err != nil {
		return loadError(err)
	}
	t.log.Info("Listener tracker loaded", zap.Stringer("kernelFeatures", t.features))
	return nil
}

func (t *Tracker) openReader() error {
	rd, err := ringbuf.NewReader(t.objs.Events)
	if err != nil {
		return fmt.Errorf("tracker: open ring buffer: %w", err)
	}
	t.reader = rd
	go t.readLoop()
	return nil
}

func loadError(err error) error {
	var ve *ebpf.VerifierError
	if errors.As(err, &ve) {
		return fmt.Errorf("tracker: verifier rejected tracker.c: %w (log tail: %v)", err, ve.Log[max(0, len(ve.Log)-5):])
	}
	return fmt.Errorf("tracker: load eBPF objects: %w", err)
}

func (t *Tracker) attach() error {
	l, err := link.AttachTracing(link.TracingOptions{Program: t.objs.OnState})
	if err != nil {
		return fmt.Errorf("tracker: attach tp_btf/inet_sock_set_state: %w", err)
	}
	t.links = append(t.links, l)
	if t.noListenExit {
		return nil
	}
	l, err = link.Tracepoint("syscalls", "sys_exit_listen", t.objs.OnListenExit, nil)
	if err != nil {
		// Without tracefs the port of listen() without bind() comes from
		// sock_diag instead; everything else works.
		t.log.Info("sys_exit_listen tracepoint unavailable; listen() without bind() is completed from sock_diag", zap.Error(err))
		return nil
	}
	t.links = append(t.links, l)
	t.listenExit = true
	return nil
}

// Table is the listener table the tracker keeps up to date.
func (t *Tracker) Table() *listeners.Table { return t.table }

// Reconcile applies a complete sock_diag dump of namespace netns, started
// when the table's sequence was since, to the table (listeners.Table.Reconcile)
// and to the kernel's accept-queue watch.
func (t *Tracker) Reconcile(netns uint32, observed []listeners.Listener, since uint64) listeners.Drift {
	d := t.table.Reconcile(netns, observed, since)
	t.updateIndex(d.Ports...)
	return d
}

// Stale reports whether the table stopped following the kernel (the ring
// buffer could not be read); answers must not come from it any more.
func (t *Tracker) Stale() bool { return t.stopped.Load() }

// Features reports the optional kernel capabilities in use.
func (t *Tracker) Features() Features { return t.features }

// ListenExitHooked reports whether sys_exit_listen completes listen()
// without bind() in the kernel.
func (t *Tracker) ListenExitHooked() bool { return t.listenExit }

// Close stops the read loop and detaches and unloads everything, in the
// reverse order of New. It is safe to call on a half-started tracker and
// more than once.
func (t *Tracker) Close() error {
	t.closeOnce.Do(func() { t.closeErr = t.close() })
	return t.closeErr
}

func (t *Tracker) close() error {
	var errs []error
	if t.reader != nil {
		errs = append(errs, t.reader.Close())
		<-t.done
		t.reader = nil
	}
	for i := len(t.links) - 1; i >= 0; i-- {
		errs = append(errs, t.links[i].Close())
	}
	t.links = nil
	errs = append(errs, t.objs.Close())
	return errors.Join(errs...)
}
