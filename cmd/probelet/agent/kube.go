package agent

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/probelet/probelet/kube"
	"github.com/probelet/probelet/kube/events"
	"github.com/probelet/probelet/kube/pdb"
	"github.com/probelet/probelet/kube/podwatch"
	"github.com/probelet/probelet/kube/readiness"
)

// kubeParts are the API server side: optional, built only when there is a
// kubeconfig or an in-cluster configuration.
type kubeParts struct {
	pods      *podwatch.Watcher
	readiness *readiness.Writer
	events    *events.Recorder
	budgets   *pdb.Checker // nil: --kill-guard off
}

// buildKube connects to the API server if probelet is configured to. It
// does not wait for the API server: probing never depends on it, and the
// informer and writers catch up when it answers.
func (a *Agent) buildKube(p *parts) (*kubeParts, error) {
	cfg, err := kube.Config(a.cfg.Kubeconfig)
	if errors.Is(err, kube.ErrNoConfig) {
		a.log.Info("No API server configured (no --kubeconfig, not in a cluster): running node-only; " +
			"readiness gates and Events are not written")
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	client, err := kube.NewClient(cfg)
	if err != nil {
		return nil, err
	}
	log := a.log.Named("kube")
	k := &kubeParts{}
	if k.pods, err = podwatch.New(client, a.cfg.NodeName, p.cache, log.Named("pods")); err != nil {
		return nil, err
	}
	m := readiness.NewMetrics()
	if err := m.Register(a.reg); err != nil {
		return nil, err
	}
	if k.readiness, err = readiness.New(readiness.Options{Client: client, Informer: k.pods.Informer(),
		Lister: k.pods.Lister(), Status: p.engine, Log: log.Named("readiness"), Metrics: m}); err != nil {
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
	log.Info("Connected to the API server", zap.String("host", cfg.Host), zap.String("node", a.cfg.NodeName))
	return k, nil
}

// run starts the API server side's goroutines as one task.
func (k *kubeParts) run(ctx context.Context) error {
	if k == nil {
		return nil
	}
	runs := []func(context.Context) error{k.pods.Run, k.readiness.Run, k.events.Run}
	if k.budgets != nil {
		runs = append(runs, k.budgets.Run)
	}
	done := make(chan struct{}, len(runs))
	for _, f := range runs {
		go func() {
			defer func() { done <- struct{}{} }()
			_ = f(ctx) // each logs its own trouble and returns nil
		}()
	}
	for range runs {
		<-done
	}
	return nil
}
