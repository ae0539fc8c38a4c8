package agent

import (
	"context"
	"errors"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/probelet/probelet/internal/httpserve"
)

// shutdownTimeout bounds how long the metrics server drains on exit.
const shutdownTimeout = 5 * time.Second

// Run builds the components and serves until ctx ends (SIGTERM in the
// daemon) or a server fails. It then shuts down in order: unregister from
// NRI (no new events), stop the socket server, stop every probe worker,
// close the metrics endpoint and the CRI connection. It returns nil after
// a clean shutdown. An Agent runs once.
func (a *Agent) Run(ctx context.Context) error {
	// Components get contexts that only shutdown cancels, one by one, so
	// the order below holds whatever ends ctx.
	base := context.WithoutCancel(ctx)
	// The first failure ends Run; goRun logs any later one rather than
	// block on this channel, however many tasks send to it.
	failed := make(chan error, 1)
	p, nri, err := a.start(ctx, base, failed)
	if err != nil || p == nil {
		return err
	}
	defer p.release()
	// The socket and /metrics serve while the TCP prober loads: they read
	// the engine and the cache, which answer before the engine runs.
	sock := a.goRun(base, a.serveSocket(p), failed)
	web := a.goRun(base, a.serveMetrics(p), failed)
	state := a.goRun(base, a.serveState(p), failed)
	if err = p.tcp.wait(ctx, failed); err != nil {
		nri.stop()
		sock.stop()
		state.stop()
		web.stop()
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return nil
		}
		return err
	}
	// The engine only now: no probe runs before the TCP prober is loaded.
	engine := a.goRun(base, p.engine.Run, failed)
	if !a.launched {
		nri = a.goRun(base, p.plugin.Run, failed)
	}
	a.mu.Lock()
	a.parts = p
	a.mu.Unlock()

	guard := a.goRun(base, p.runGuard, nil)
	recon := a.goRun(base, func(ctx context.Context) error { p.recon.Run(ctx); return nil }, nil)
	api := a.goRun(base, p.kube.run, nil)
	hist := a.goRun(base, p.runHistory, nil)
	forget := a.goRun(base, p.runExecForget, nil)
	a.log.Info("probelet started", zap.Any("config", a.cfg))
	close(a.started)
	// Loading the eBPF objects against the kernel's BTF peaks the heap at
	// several times what the agent keeps. Hand those pages back now rather
	// than over minutes of background scavenging: resident memory is what
	// a node's operator sees (issue 12).
	debug.FreeOSMemory()

	select {
	case <-ctx.Done():
		a.log.Info("Shutting down")
	case err = <-failed:
		a.log.Error("Shutting down after a failure", zap.Error(err))
	}
	nri.stop()
	recon.stop()
	sock.stop()
	state.stop()
	engine.stop() // cancels the kills the guard holds
	guard.stop()
	api.stop()  // after the engine: the last results and events are written
	hist.stop() // likewise: the last events and restarts reach the file
	forget.stop()
	web.stop()
	a.log.Info("probelet stopped")
	return err
}

// start builds the daemon; a launched plugin is registered with NRI by
// then (nri), a daemon registers once Run started its engine. A nil
// *parts with a nil error means ctx ended first.
func (a *Agent) start(ctx, base context.Context, failed chan error) (p *parts, nri *task, err error) {
	if a.launched {
		return a.startLaunched(ctx, base, failed)
	}
	if p, err = a.build(ctx); err != nil {
		return nil, nil, err
	}
	return p, nil, nil
}

// task is a goroutine with its own cancel, so shutdown can stop the
// components one after another.
type task struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// stop is a no-op on a nil task (one not started).
func (t *task) stop() {
	if t == nil {
		return
	}
	t.cancel()
	t.wg.Wait()
}

// goRun runs f until its context ends; an error f returns before that is
// sent to failed (when given) if nothing is waiting there yet, else logged:
// Run acts on the first failure.
func (a *Agent) goRun(parent context.Context, f func(context.Context) error, failed chan<- error) *task {
	ctx, cancel := context.WithCancel(parent)
	t := &task{cancel: cancel}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		err := f(ctx)
		if err == nil || ctx.Err() != nil || failed == nil {
			return
		}
		select {
		case failed <- err:
		default:
			a.Logger().Error("A component failed while another failure is shutting probelet down", zap.Error(err))
		}
	}()
	return t
}

func (a *Agent) serveSocket(p *parts) func(context.Context) error {
	return func(ctx context.Context) error {
		if p.socket == nil {
			a.log.Info("No socket server configured; --listen is not served", zap.String("listen", a.cfg.Listen))
			return nil
		}
		if err := p.socket.ListenAndServe(ctx, a.cfg.Listen); err != nil {
			return errServe("socket server", err)
		}
		return nil
	}
}

func (a *Agent) serveMetrics(p *parts) func(context.Context) error {
	return func(ctx context.Context) error {
		if p.metrics == nil {
			return nil
		}
		srv := httpserve.New(a.handler(p))
		errc := make(chan error, 1)
		go func() { errc <- srv.Serve(p.metrics) }()
		a.log.Info("Serving /metrics and /healthz", zap.String("address", p.metrics.Addr().String()))
		select {
		case err := <-errc:
			return errServe("metrics server", err)
		case <-ctx.Done():
		}
		sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			srv.Close()
		}
		return nil
	}
}

// runHistory keeps the engine's events and restarts in the state directory.
func (p *parts) runHistory(ctx context.Context) error {
	if p.history == nil {
		return nil
	}
	return p.history.Run(ctx, p.engine)
}
