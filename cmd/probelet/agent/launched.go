package agent

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/probelet/probelet/lifecycle"
	"github.com/probelet/probelet/plugin"
)

// AsLaunchedPlugin runs the agent as a plugin the runtime launched
// (plugin.Launched): the NRI connection comes first, and the daemon is
// built when the runtime's Configure request brings the configuration
// (flag lines, applied over the Config given to New). When the runtime
// closes the connection Run returns plugin.ErrConnectionClosed; the runtime
// launches probelet again when it restarts.
func AsLaunchedPlugin() Option {
	return func(a *Agent) error {
		a.launched = true
		return nil
	}
}

// startLaunched registers first and builds everything else inside the
// Configure request, before the runtime's Synchronize arrives.
func (a *Agent) startLaunched(ctx, base context.Context, failed chan error) (*parts, *task, error) {
	late := &lateCache{}
	built := make(chan *parts, 1)
	onConfig := func(text string) error {
		p, err := a.configure(ctx, text)
		if err != nil {
			return err
		}
		late.set(p.cache)
		built <- p
		return nil
	}
	pl, err := plugin.New(late, a.pluginOptions(plugin.WithConfigHandler(onConfig))...)
	if err != nil {
		return nil, nil, fmt.Errorf("NRI plugin: %w", err)
	}
	nri := a.goRun(base, pl.Run, failed)
	select {
	case p := <-built:
		p.plugin = pl
		return p, nri, nil
	case err := <-failed:
		nri.stop()
		return nil, nil, err
	case <-ctx.Done():
		nri.stop()
		return nil, nil, nil
	}
}

// configure applies the runtime's configuration and builds the daemon.
func (a *Agent) configure(ctx context.Context, text string) (*parts, error) {
	cfg, err := ConfigFromText(a.cfg, text)
	if err != nil {
		return nil, err
	}
	a.cfg = cfg
	if a.ownLog {
		l, err := NewLogger(a.logOut, cfg.LogFormat, cfg.LogLevel)
		if err != nil {
			return nil, err
		}
		a.mu.Lock()
		a.log = l
		a.mu.Unlock()
	}
	a.log.Info("Configured by the runtime that launched probelet", zap.Any("config", cfg))
	return a.buildParts(ctx)
}

// lateCache stands in for the node cache until the configuration built it.
// The runtime configures a plugin before it sends any event, so nothing
// reaches it unset; if something did, it is dropped.
type lateCache struct {
	c atomic.Pointer[lifecycle.Cache]
}

var _ plugin.Cache = (*lateCache)(nil)

func (l *lateCache) set(c *lifecycle.Cache) { l.c.Store(c) }

func (l *lateCache) RunPod(at time.Time, sb lifecycle.Sandbox) {
	if c := l.c.Load(); c != nil {
		c.RunPod(at, sb)
	}
}

func (l *lateCache) StopPod(at time.Time, sb lifecycle.Sandbox) {
	if c := l.c.Load(); c != nil {
		c.StopPod(at, sb)
	}
}

func (l *lateCache) RemovePod(at time.Time, sb lifecycle.Sandbox) {
	if c := l.c.Load(); c != nil {
		c.RemovePod(at, sb)
	}
}

func (l *lateCache) UpdateContainer(at time.Time, sb lifecycle.Sandbox, ct lifecycle.Container) {
	if c := l.c.Load(); c != nil {
		c.UpdateContainer(at, sb, ct)
	}
}

func (l *lateCache) RemoveContainer(at time.Time, ct lifecycle.Container) {
	if c := l.c.Load(); c != nil {
		c.RemoveContainer(at, ct)
	}
}

func (l *lateCache) Sync(at time.Time, sbs []lifecycle.Sandbox, ctrs []lifecycle.Container) {
	if c := l.c.Load(); c != nil {
		c.Sync(at, sbs, ctrs)
	}
}

func (l *lateCache) SetNRIConnected(connected bool) {
	if c := l.c.Load(); c != nil {
		c.SetNRIConnected(connected)
	}
}
