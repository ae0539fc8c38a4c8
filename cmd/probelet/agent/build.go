package agent

import (
	"context"
	"fmt"
	"net"

	"go.uber.org/zap"

	"github.com/probelet/probelet/cri/client"
	"github.com/probelet/probelet/history"
	"github.com/probelet/probelet/internal/kubeconfig"
	"github.com/probelet/probelet/internal/promutil"
	"github.com/probelet/probelet/killer"
	"github.com/probelet/probelet/lifecycle"
	"github.com/probelet/probelet/plugin"
	"github.com/probelet/probelet/podnet"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/probespec"
	"github.com/probelet/probelet/quietio"
)

// build makes every component; on error it releases what it made.
func (a *Agent) build(ctx context.Context) (*parts, error) {
	p, err := a.buildParts(ctx)
	if err != nil {
		return nil, err
	}
	if p.plugin, err = plugin.New(p.cache, a.pluginOptions()...); err != nil {
		p.release()
		return nil, fmt.Errorf("NRI plugin: %w", err)
	}
	return p, nil
}

// buildParts makes everything but the NRI plugin.
func (a *Agent) buildParts(ctx context.Context) (_ *parts, err error) {
	p := &parts{}
	defer func() {
		if err != nil {
			p.release()
		}
	}()
	// Process-wide, before anything dials or probes (Validate checked it).
	if err = quietio.Set(a.cfg.IO); err != nil {
		return nil, err
	}
	// For probes from pods' own network namespaces: --probe-origin pod
	// cannot start without; a pod that asks for it alone learns why.
	if p.pins, p.pinsErr = podnet.NewPins(); p.pinsErr != nil && a.cfg.ProbeOrigin == string(probespec.OriginPod) {
		return nil, fmt.Errorf("--probe-origin pod: %w", p.pinsErr)
	}
	if p.pins != nil {
		if err = promutil.Register(a.reg, originCollectors(p.pins)...); err != nil {
			return nil, fmt.Errorf("probe origin: %w", err)
		}
	}
	if p.cri, err = client.New(a.cfg.RuntimeEndpoint, client.WithLogger(a.log.Named("cri"))); err != nil {
		return nil, err
	}
	if err = promutil.Register(a.reg, p.cri.Collectors()...); err != nil {
		return nil, fmt.Errorf("CRI client: %w", err)
	}
	if p.exec, err = a.execRunner(ctx, p); err != nil {
		return nil, err
	}
	// The runtime end of a kill: is the instance still running, its preStop
	// hook (exec hooks through the exec probes' runner), then the stop.
	if p.stopper, err = killer.New(p.cri, killer.WithLogger(a.log.Named("killer")), killer.WithExecRunner(p.exec)); err != nil {
		return nil, err
	}
	p.history = a.openHistory()
	// Loads while the rest is built and the socket serves; Run starts the
	// engine once it is loaded.
	p.tcp = loadTCP(a.cfg.TCPMode, func() (probe.TCPProber, error) {
		return a.tcp(ctx, a.cfg.TCPMode, a.cfg.TCPVerify, a.log.Named("tcp"), a.reg)
	})
	if p.guard, err = a.buildGuard(p); err != nil {
		return nil, err
	}
	kcfg, kerr := kubeconfig.Load(a.cfg.Kubeconfig)
	if p.engine, err = prober.NewManager(a.engineOptions(p, kerr == nil)...); err != nil {
		return nil, fmt.Errorf("probe engine: %w", err)
	}
	if err = a.buildLifecycle(p); err != nil {
		return nil, err
	}
	if p.kube, err = a.buildKube(p, kcfg, kerr); err != nil {
		return nil, fmt.Errorf("API server: %w", err)
	}
	if a.cfg.MetricsBindAddress != "" {
		if p.metrics, err = net.Listen("tcp", a.cfg.MetricsBindAddress); err != nil {
			return nil, fmt.Errorf("--metrics-bind-address: %w", err)
		}
	}
	if a.socket != nil {
		var past []prober.Event
		if p.history != nil {
			past = p.history.Events()
		}
		if p.socket, err = a.socket(p.engine, p.cache, nriConnection{p}, p.tcp.socketStatus, past, a.log.Named("socket")); err != nil {
			return nil, fmt.Errorf("socket server: %w", err)
		}
	}
	return p, nil
}

// engineOptions configures the engine; withAPI says an API server is
// configured, which tells the pods' namespace exceptions to probe hosts.
func (a *Agent) engineOptions(p *parts, withAPI bool) []prober.Option {
	action := prober.ActionRestart
	if a.cfg.LivenessAction == "report" {
		action = prober.ActionReport
	}
	cidrs, _ := a.cfg.ProbeHostCIDRs() // Validate checked them
	opts := []prober.Option{
		prober.WithProbeHostCIDRs(cidrs...),
		prober.WithProbeOrigin(probespec.Origin(a.cfg.ProbeOrigin), p.pins, p.pinsErr),
		prober.WithLogger(a.log.Named("prober")),
		prober.WithRegisterer(a.reg),
		prober.WithExecRunner(p.exec),
		prober.WithKiller(p.killer()),
		prober.WithLivenessAction(action),
	}
	if p.tcp != nil {
		opts = append(opts, prober.WithTCPProber(p.tcp))
	}
	if p.history != nil {
		opts = append(opts, prober.WithRestartHistory(p.history))
	}
	if withAPI {
		opts = append(opts, prober.WithNamespaceGrants())
	}
	return append(opts, a.engineOpts...)
}

// buildLifecycle makes the cache and the reconciler.
func (a *Agent) buildLifecycle(p *parts) error {
	var err error
	if p.cache, err = lifecycle.New(p.engine, lifecycle.WithLogger(a.log.Named("lifecycle")), lifecycle.WithRegisterer(a.reg)); err != nil {
		return fmt.Errorf("node cache: %w", err)
	}
	p.recon, err = lifecycle.NewReconciler(p.cache, p.cri.Lister(), a.cfg.ReconcileInterval.Duration,
		lifecycle.WithReconcileLogger(a.log.Named("reconcile")))
	return err
}

func (a *Agent) pluginOptions(extra ...plugin.Option) []plugin.Option {
	opts := []plugin.Option{
		plugin.WithSocketPath(a.cfg.NRISocket),
		plugin.WithIndex(a.cfg.PluginIndex),
		plugin.WithLogger(a.log.Named("nri")),
		plugin.WithRegisterer(a.reg),
	}
	opts = append(opts, extra...)
	return append(opts, a.pluginOpts...)
}

// release closes what build made and Run does not stop itself.
func (p *parts) release() {
	if p.metrics != nil {
		p.metrics.Close()
	}
	if p.kube != nil && p.kube.state != nil {
		p.kube.state.lis.Close() // its server closed it already, unless it never served
	}
	if p.tcp != nil {
		p.tcp.Close()
	}
	if p.direct != nil {
		p.direct.Close()
	}
	if p.cri != nil {
		p.cri.Close()
	}
}

// openHistory opens the history file in --state-dir. probelet starts
// anyway when it cannot: the history is for troubleshooting, not probing.
func (a *Agent) openHistory() *history.Log {
	if a.cfg.StateDir == "" {
		return nil
	}
	h, err := history.Open(a.cfg.StateDir, history.WithLogger(a.log.Named("history")))
	if err != nil {
		a.log.Warn("Probe events and restarts issued will not survive a restart", zap.String("stateDir", a.cfg.StateDir), zap.Error(err))
		return nil
	}
	return h
}
