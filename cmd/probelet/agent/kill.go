package agent

import (
	"context"
	"fmt"

	"github.com/probelet/probelet/killguard"
	"github.com/probelet/probelet/lifecycle"
	"github.com/probelet/probelet/prober"
)

// The engine takes the node cache's pod snapshots.
var _ lifecycle.Sink = (*prober.Manager)(nil)

// buildGuard puts the kill guard in front of the CRI killer unless it is
// off. It reads the engine's census and, when probelet talks to the API
// server, the PodDisruptionBudgets, both made after it.
func (a *Agent) buildGuard(p *parts) (*killguard.Guard, error) {
	if a.cfg.KillGuard == "off" {
		a.log.Info("Kill guard off: liveness and startup kills go at once, like the kubelet's")
		return nil, nil
	}
	m := killguard.NewMetrics()
	if err := m.Register(a.reg); err != nil {
		return nil, fmt.Errorf("kill guard: %w", err)
	}
	g, err := killguard.New(p.stopper, a.cfg.KillGuardConfig(), killguard.WithMetrics(m),
		killguard.WithLogger(a.log.Named("killguard")), killguard.WithBudget(p.budget))
	if err != nil {
		return nil, fmt.Errorf("kill guard: %w", err)
	}
	return g, nil
}

// killer is what the engine kills through.
func (p *parts) killer() prober.ContainerKiller {
	if p.guard != nil {
		return p.guard
	}
	return p.stopper
}

// budget asks the PodDisruptionBudgets, when probelet reads them.
func (p *parts) budget(k prober.Kill) string {
	if p.kube == nil || p.kube.budgets == nil {
		return ""
	}
	return p.kube.budgets.Budget(k)
}

// runGuard lets kills through the guard until ctx ends.
func (p *parts) runGuard(ctx context.Context) error {
	if p.guard == nil {
		return nil
	}
	return p.guard.Run(ctx, func() killguard.Census {
		probed, failing := p.engine.LivenessCensus()
		return killguard.Census{Probed: probed, Failing: failing}
	})
}
