package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"go.uber.org/zap"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/probelet/probelet/internal/kubeconfig"
	"github.com/probelet/probelet/kube"
	"github.com/probelet/probelet/kube/events"
	"github.com/probelet/probelet/kube/heartbeat"
	"github.com/probelet/probelet/kube/pdb"
	"github.com/probelet/probelet/kube/podwatch"
	"github.com/probelet/probelet/kube/readiness"
)

// kubeParts are the API server side: optional, built only when there is a
// kubeconfig or an in-cluster configuration.
type kubeParts struct {
	log       *zap.Logger
	host      string
	node      string
	pods      *podwatch.Watcher
	readiness *readiness.Writer
	events    *events.Recorder
	heartbeat *heartbeat.Heartbeat
	budgets   *pdb.Checker   // nil: --kill-guard off
	state     *stateListener // nil: --state-listen off
}

// nriConnection reads the NRI plugin's connection when asked: the parts
// get their plugin after the API server side is built (a launched plugin's
// comes first, but its parts are built after).
type nriConnection struct{ p *parts }

func (c nriConnection) Connected() bool { return c.p.plugin != nil && c.p.plugin.Connected() }

// buildKube connects to the API server if probelet is configured to. It
// does not wait for the API server: probing never depends on it, and the
// informer and writers catch up when it answers.
func (a *Agent) buildKube(p *parts, cfg *rest.Config, err error) (*kubeParts, error) {
	if errors.Is(err, kubeconfig.ErrNoConfig) {
		if a.cfg.StateListen != "" {
			return nil, errors.New("--state-listen needs the API server (its reads are reviewed there), and none is configured")
		}
		a.log.Info("No API server configured (no --kubeconfig, not in a cluster): running node-only; " +
			"readiness gates and Events are not written")
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	apiMetrics := kube.NewMetrics()
	if err := apiMetrics.Register(a.reg); err != nil {
		return nil, err
	}
	client, err := kube.NewClient(cfg, apiMetrics)
	if err != nil {
		return nil, err
	}
	log := a.log.Named("kube")
	k := &kubeParts{log: log, host: cfg.Host, node: a.cfg.NodeName}
	var endpoint, pin string
	if a.cfg.StateListen != "" {
		if k.state, err = newStateListener(a.cfg.StateListen, a.cfg.NodeName, client); err != nil {
			return nil, err
		}
		endpoint, pin = k.state.endpoint, k.state.pin
	}
	if k.pods, err = podwatch.New(client, a.cfg.NodeName, p.cache, log.Named("pods")); err != nil {
		return nil, err
	}
	m := readiness.NewMetrics()
	if err := m.Register(a.reg); err != nil {
		return nil, err
	}
	if k.heartbeat, err = heartbeat.New(heartbeat.Options{Client: client, NodeName: a.cfg.NodeName,
		Namespace: a.cfg.LeaseNamespace, RenewInterval: a.cfg.LeaseRenewInterval.Duration, Runtime: nriConnection{p}, Scheduler: p.engine, Log: log.Named("heartbeat"),
		// Read when called: the writer is made next.
		OnResumed: func() { k.readiness.Recheck() }, TCPMode: p.tcp.leaseMode,
		StateEndpoint: endpoint, StateCertSHA256: pin}); err != nil {
		return nil, err
	}
	if k.readiness, err = readiness.New(readiness.Options{Client: client, Informer: k.pods.Informer(),
		Lister: k.pods.Lister(), Status: p.engine, Log: log.Named("readiness"), Metrics: m,
		Hold: k.heartbeat.Holding}); err != nil {
		return nil, err
	}
	if k.events, err = events.New(client, a.cfg.NodeName, p.engine, log.Named("events")); err != nil {
		return nil, err
	}
	if p.guard != nil {
		if k.budgets, err = pdb.New(client, k.pods.Lister()); err != nil {
			return nil, err
		}
	}
	return k, nil
}

// run runs the API server side's components as one task and joins them.
// None of them stops probing: an error is logged, and returned once all
// have stopped.
func (k *kubeParts) run(ctx context.Context) error {
	if k == nil {
		return nil
	}
	runs := map[string]func(context.Context) error{
		"pod watch": k.pods.Run, "readiness condition writer": k.readiness.Run, "event recorder": k.events.Run,
		"API server connection": k.announce, "node Lease heartbeat": k.heartbeat.Run,
	}
	if k.budgets != nil {
		runs["PodDisruptionBudget watch"] = k.budgets.Run
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(runs))
	for name, f := range runs {
		wg.Go(func() {
			if err := f(ctx); err != nil {
				k.log.Error("The API server side stopped", zap.String("component", name), zap.Error(err))
				errs <- fmt.Errorf("%s: %w", name, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}

// announce logs the connection once the pod informer has listed the
// node's pods: the first answer of the API server, not the configuration.
func (k *kubeParts) announce(ctx context.Context) error {
	if cache.WaitForCacheSync(ctx.Done(), k.pods.HasSynced) {
		k.log.Info("Connected to the API server", zap.String("host", k.host), zap.String("node", k.node), zap.Int("pods", k.pods.Pods()))
	}
	return nil
}
