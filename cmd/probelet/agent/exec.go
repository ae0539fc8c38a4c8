package agent

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/probelet/probelet/directexec"
	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober/probe/execprobe"
)

// execRunner is what exec probes go through: the CRI client
// (--exec-mode runtime), or the direct executor, which hands every
// container it cannot serve exactly as the runtime to the CRI client.
func (a *Agent) execRunner(ctx context.Context, p *parts) (execprobe.Runner, error) {
	if a.cfg.ExecMode != "direct" {
		return p.cri, nil
	}
	m := directexec.NewMetrics()
	if err := m.Register(a.reg); err != nil {
		return nil, fmt.Errorf("--exec-mode direct: %w", err)
	}
	opts := []directexec.Option{
		directexec.WithStateDir(a.runtimeStateDir(ctx, p)),
		directexec.WithLogger(a.log.Named("exec")),
		directexec.WithMetrics(m),
	}
	if a.cfg.ExecHelper != "" {
		opts = append(opts, directexec.WithHelper(a.cfg.ExecHelper))
	}
	d, err := directexec.New(p.cri, opts...)
	if err != nil {
		return nil, fmt.Errorf("--exec-mode direct: %w", err)
	}
	p.direct = d
	return d, nil
}

// stateDirTimeout bounds asking containerd for its state directory at
// start: a runtime that does not answer leaves the default.
const stateDirTimeout = 5 * time.Second

// runtimeStateDir is --runtime-state-dir, or else what containerd says its
// state directory is, or else the default. A wrong directory would send
// every direct exec back to ExecSync ("no such file"), so where it came
// from is logged.
func (a *Agent) runtimeStateDir(ctx context.Context, p *parts) string {
	if a.cfg.RuntimeStateDir != "" {
		return a.cfg.RuntimeStateDir
	}
	ctx, cancel := context.WithTimeout(ctx, stateDirTimeout)
	defer cancel()
	dir, err := p.cri.StateDir(ctx)
	if err != nil {
		a.log.Warn("Cannot learn containerd's state directory; direct exec assumes the default (--runtime-state-dir sets it)",
			zap.String("dir", directexec.DefaultStateDir), zap.Error(err))
		return directexec.DefaultStateDir
	}
	a.log.Info("Direct exec reads OCI bundles from containerd's state directory", zap.String("dir", dir))
	return dir
}

// runExecForget drops the direct executor's state of a container (its
// profile and compiled seccomp filter) once the container stops.
func (p *parts) runExecForget(ctx context.Context) error {
	if p.direct == nil {
		return nil
	}
	events, cancel := p.cache.SubscribeEvents(256)
	defer cancel()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				return nil
			}
			if ev.Type == node.ContainerStoppedEvent || ev.Type == node.ContainerDeletedEvent {
				p.direct.Forget(ev.ContainerID)
			}
		}
	}
}
