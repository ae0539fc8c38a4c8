package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/probelet/probelet/cri/proxy"
	"github.com/probelet/probelet/internal/endpoint"
	"github.com/probelet/probelet/lifecycle"
)

// proxyVerifySettle is how long shadow mode gives containerd's event to
// arrive before a differing cached answer counts as a mismatch: its events
// follow a change by milliseconds.
const proxyVerifySettle = time.Second

// validateProxy checks --cri-proxy-listen: a unix endpoint of its own.
func (c Config) validateProxy() error {
	if c.CRIProxyListen == "" {
		if c.CRIProxyVerify {
			return errors.New("--cri-proxy-verify needs --cri-proxy-listen")
		}
		return nil
	}
	if err := unixEndpoint(c.CRIProxyListen); err != nil {
		return err
	}
	switch {
	case endpoint.Same(c.CRIProxyListen, c.RuntimeEndpoint):
		return errors.New("is the runtime's own endpoint (--runtime-endpoint)")
	case endpoint.Same(c.CRIProxyListen, c.Listen):
		return errors.New("is probelet's own socket (--listen)")
	}
	return nil
}

// proxyTask is the running CRI proxy.
type proxyTask struct {
	p    *proxy.Proxy
	task *task
}

// startProxy listens on --cri-proxy-listen and serves at once: it runs
// before anything else is built and before NRI registration, so the
// kubelet has its runtime from probelet's first moments, passing calls
// through until the node cache is attached. A socket handed over by systemd
// (socket activation) is used as it is and left for the next probelet.
func (a *Agent) startProxy(base context.Context, failed chan<- error) (*proxyTask, error) {
	if a.cfg.CRIProxyListen == "" {
		return nil, nil
	}
	opts := []proxy.Option{proxy.WithLogger(a.log.Named("cri-proxy")), proxy.WithRegisterer(a.reg)}
	if a.cfg.CRIProxyVerify {
		opts = append(opts, proxy.WithVerify(proxyVerifySettle))
	}
	p, err := proxy.New(a.cfg.RuntimeEndpoint, opts...)
	if err != nil {
		return nil, fmt.Errorf("--cri-proxy-listen: %w", err)
	}
	l, release, activated, err := proxy.Listen(a.cfg.CRIProxyListen)
	if err != nil {
		p.Close()
		return nil, fmt.Errorf("--cri-proxy-listen: %w", err)
	}
	a.log.Info("CRI proxy listening", zap.String("listen", a.cfg.CRIProxyListen), zap.Bool("socketActivated", activated))
	t := a.goRun(base, func(ctx context.Context) error {
		defer release()
		defer p.Close()
		if err := p.Serve(ctx, l); err != nil {
			return errServe("CRI proxy", err)
		}
		return nil
	}, failed)
	return &proxyTask{p: p, task: t}, nil
}

// attach feeds the proxy the node cache's NRI events once it exists.
func (t *proxyTask) attach(cache *lifecycle.Cache) {
	if t != nil && cache != nil {
		t.p.AttachLifecycle(cache)
	}
}

func (t *proxyTask) stop() {
	if t != nil {
		t.task.stop()
	}
}
