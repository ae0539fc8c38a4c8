package agent

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/probelet/probelet/internal/logging"
	"github.com/probelet/probelet/lifecycle"
	"github.com/probelet/probelet/plugin"
)

// AsLaunchedPlugin runs the agent as a plugin the runtime launched
// (plugin.Launched): the NRI connection comes first, and the daemon is
// built once the runtime's Configure request has brought the configuration
// (flag lines, applied over the Config given to New) and been answered. When the runtime
// closes the connection Run returns plugin.ErrConnectionClosed; the runtime
// launches probelet again when it restarts.
func AsLaunchedPlugin() Option {
	return func(a *Agent) error {
		a.launched = true
		return nil
	}
}

// startLaunched registers first and answers the runtime's Configure at
// once: it only reads the configuration and remakes the logger, since the
// runtime gives a plugin 2 s (NRI's request timeout) to answer. The rest
// (the eBPF load, the listener snapshot, the clients) is built after, while
// the runtime's Synchronize and events wait in lateCache.
func (a *Agent) startLaunched(ctx, base context.Context, failed chan error) (*parts, *task, error) {
	late := &lateCache{}
	configured := make(chan struct{})
	var pl *plugin.Plugin
	onConfig := func(text string) error {
		if err := a.configure(text); err != nil {
			return err
		}
		pl.SetLogger(a.Logger().Named("nri"))
		close(configured)
		return nil
	}
	pl, err := plugin.New(late, a.pluginOptions(plugin.WithConfigHandler(onConfig))...)
	if err != nil {
		return nil, nil, fmt.Errorf("NRI plugin: %w", err)
	}
	nri := a.goRun(base, pl.Run, failed)
	select {
	case <-configured:
	case err := <-failed:
		nri.stop()
		return nil, nil, err
	case <-ctx.Done():
		nri.stop()
		return nil, nil, nil
	}
	p, err := a.buildParts(ctx)
	if err != nil {
		nri.stop()
		return nil, nil, err
	}
	p.plugin = pl
	late.set(p.cache)
	return p, nri, nil
}

// configure applies the runtime's configuration and remakes the logger.
func (a *Agent) configure(text string) error {
	cfg, err := ConfigFromText(a.cfg, text)
	if err != nil {
		return err
	}
	a.cfg = cfg
	if a.ownLog {
		l, err := logging.New(a.logOut, cfg.LogFormat, cfg.LogLevel)
		if err != nil {
			return err
		}
		a.mu.Lock()
		a.log = l
		a.mu.Unlock()
	}
	a.Logger().Info("Configured by the runtime that launched probelet", zap.Any("config", cfg))
	return nil
}

// lateCache stands in for the node cache until it is built. The runtime
// sends Synchronize and events as soon as Configure is answered; they are
// kept, in order, with the times they arrived, and handed to the cache
// when it is set. Building takes seconds, and Synchronize carries the
// node's whole state, so what is kept stays small.
type lateCache struct {
	mu      sync.Mutex
	c       *lifecycle.Cache
	pending []func(*lifecycle.Cache)
}

var _ plugin.Cache = (*lateCache)(nil)

// set hands the kept calls to c, then passes every later one straight on.
func (l *lateCache) set(c *lifecycle.Cache) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range l.pending {
		f(c)
	}
	l.c, l.pending = c, nil
}

// do calls f on the cache, or keeps it for set. Calls arriving while set
// replays wait for it, so the order holds.
func (l *lateCache) do(f func(*lifecycle.Cache)) {
	l.mu.Lock()
	c := l.c
	if c == nil {
		l.pending = append(l.pending, f)
	}
	l.mu.Unlock()
	if c != nil {
		f(c)
	}
}

func (l *lateCache) RunPod(at time.Time, sb lifecycle.Sandbox) {
	l.do(func(c *lifecycle.Cache) { c.RunPod(at, sb) })
}

func (l *lateCache) StopPod(at time.Time, sb lifecycle.Sandbox) {
	l.do(func(c *lifecycle.Cache) { c.StopPod(at, sb) })
}

func (l *lateCache) RemovePod(at time.Time, sb lifecycle.Sandbox) {
	l.do(func(c *lifecycle.Cache) { c.RemovePod(at, sb) })
}

func (l *lateCache) UpdateContainer(at time.Time, sb lifecycle.Sandbox, ct lifecycle.Container) {
	l.do(func(c *lifecycle.Cache) { c.UpdateContainer(at, sb, ct) })
}

func (l *lateCache) RemoveContainer(at time.Time, ct lifecycle.Container) {
	l.do(func(c *lifecycle.Cache) { c.RemoveContainer(at, ct) })
}

func (l *lateCache) Sync(at time.Time, sbs []lifecycle.Sandbox, ctrs []lifecycle.Container) {
	l.do(func(c *lifecycle.Cache) { c.Sync(at, sbs, ctrs) })
}
