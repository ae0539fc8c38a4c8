package agent

import (
	"context"
	"fmt"

	"github.com/probelet/probelet/directexec"
	"github.com/probelet/probelet/internal/runtimestate"
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
		directexec.WithStateDir(runtimestate.Resolve(ctx, a.cfg.RuntimeStateDir, directexec.DefaultStateDir, p.cri.StateDir, a.log)),
		directexec.WithLogger(a.log.Named("exec")),
		directexec.WithMetrics(m),
	}
	if a.cfg.RuntimeStateDir == "" { // learned: again whenever it holds no bundles
		opts = append(opts, directexec.WithStateLearner(p.cri.StateDir))
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
