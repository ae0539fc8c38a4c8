package plugin

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/containerd/nri/pkg/stub"
	"go.uber.org/zap"

	"github.com/probelet/probelet/internal/retry"
)

// Run registers with the runtime and keeps the registration alive until
// ctx is done. When the connection drops (a runtime restart) it registers
// again, waiting between attempts with capped exponential backoff (jittered); the
// runtime then replays its state through Synchronize, which reconciles the
// cache. When ctx is done Run closes the connection, which unregisters the
// plugin, and returns nil.
//
// A plugin the runtime launched serves the one connection it was given and
// returns ErrConnectionClosed when it closes.
func (p *Plugin) Run(ctx context.Context) error {
	if p.launched {
		return p.runLaunched(ctx)
	}
	backoff, failures := retry.Backoff(p.minBackoff, p.maxBackoff), 0
	for {
		st, closed, err := p.register(ctx)
		switch {
		case err == nil:
			backoff, failures = retry.Backoff(p.minBackoff, p.maxBackoff), 0
			if p.serve(ctx, st, closed) {
				return nil
			}
		case ctx.Err() != nil:
			return nil
		default:
			failures++
			p.m.failures.Inc()
			p.logFailure(failures, err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-p.clock.After(backoff.Step()):
		}
	}
}

// register makes one registration attempt with a fresh stub (a stub whose
// start failed keeps its dead connection, so it cannot be reused). closed
// is closed when the connection drops.
func (p *Plugin) register(ctx context.Context) (stub.Stub, <-chan struct{}, error) {
	conn, err := p.dial()
	if err != nil {
		return nil, nil, err
	}
	closed := make(chan struct{})
	var once sync.Once
	opts := []stub.Option{
		stub.WithLogger(nriLogger{p}),
		stub.WithOnClose(func() { once.Do(func() { close(closed) }) }),
		stub.WithConnection(conn),
	}
	if !p.launched {
		// A launched plugin's index and name come from the environment;
		// the stub refuses a second index.
		opts = append(opts, stub.WithPluginName(p.name), stub.WithPluginIdx(p.index))
	}
	st, err := stub.New(handler{p}, opts...)
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	if err := p.start(ctx, st, conn); err != nil {
		return nil, nil, err
	}
	return st, closed, nil
}

// start runs st.Start, which registers and then waits for the runtime's
// Configure with no timeout, holding the stub's lock: a runtime that dies
// in between would block it, and Run, forever. So start gives up when the
// runtime hangs up, ctx is done or the registration timeout passes, and
// then closes the connection itself (st.Stop would wait for the lock).
// The stub offers no way to free what it leaves behind: the goroutine in
// Start, its close handler queued on the lock and its server's accept
// loop, three goroutines per such rare event.
func (p *Plugin) start(ctx context.Context, st stub.Stub, conn *watchedConn) error {
	started := make(chan error, 1)
	go func() { started <- st.Start(ctx) }()
	deadline := p.clock.NewTimer(p.regTimeout)
	defer deadline.Stop()
	var stuck error
	select {
	case err := <-started:
		return startResult(st, err)
	case <-conn.gone:
		stuck = errors.New("the runtime closed the connection before configuring the plugin")
	case <-ctx.Done():
		stuck = ctx.Err()
	case <-deadline.C():
		stuck = fmt.Errorf("the runtime did not configure the plugin within %s", p.regTimeout)
	}
	select {
	case err := <-started: // Start finished after all: its result stands
		return startResult(st, err)
	default:
	}
	conn.Close()
	return fmt.Errorf("plugin: %w", stuck)
}

// startResult stops a stub whose Start failed, freeing its connection.
func startResult(st stub.Stub, err error) error {
	if err != nil {
		st.Stop()
	}
	return err
}

// serve marks the plugin connected until the connection drops (false) or
// ctx is done (true, after unregistering).
func (p *Plugin) serve(ctx context.Context, st stub.Stub, closed <-chan struct{}) bool {
	p.setConnected(true)
	name, version := p.Runtime()
	p.logger().Info("Registered with the runtime over NRI", zap.String("socket", p.socket),
		zap.String("plugin", p.index+"-"+p.name), zap.String("runtime", name), zap.String("runtimeVersion", version))
	select {
	case <-ctx.Done():
		st.Stop()
		p.setConnected(false)
		p.logger().Info("Unregistered from NRI")
		return true
	case <-closed:
		p.setConnected(false)
		p.m.reconnects.Inc()
		p.logger().Warn("NRI connection closed, registering again", zap.String("socket", p.socket))
		return false
	}
}

// logFailure warns on the first failed attempt and then only now and then,
// so a runtime that stays down does not flood the log.
func (p *Plugin) logFailure(n int, err error) {
	if n == 1 || n%50 == 0 {
		p.logger().Warn("Cannot register with the runtime over NRI, retrying",
			zap.String("socket", p.socket), zap.Int("attempt", n), zap.Error(err))
		return
	}
	p.logger().Debug("NRI registration failed", zap.Int("attempt", n), zap.Error(err))
}
