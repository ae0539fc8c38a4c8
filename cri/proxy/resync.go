package proxy

import (
	"context"
	"maps"
	"slices"
	"time"

	"go.uber.org/zap"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// resyncTimeout bounds the two listings of a resync.
const resyncTimeout = 30 * time.Second

// resyncNow lists every sandbox and container and announces what differs
// from what was announced: after a containerd restart, the exits and
// removals that happened while it was down. The first listing is the
// baseline and announces nothing (the kubelet lists at its own start).
// It reports whether containerd answered.
func (a *announcer) resyncNow(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, resyncTimeout)
	defer cancel()
	var sbs runtimeapi.ListPodSandboxResponse
	var ctrs runtimeapi.ListContainersResponse
	// The kubelet's own request shapes (an empty, non-nil filter), so the
	// memo entries are the ones its relist reads.
	if err := a.p.typedRead(ctx, mListPodSandbox, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{}}, &sbs); err != nil {
		a.p.log.Debug("Resync: cannot list sandboxes", zap.Error(err))
		return false
	}
	if err := a.p.typedRead(ctx, mListContainers, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{}}, &ctrs); err != nil {
		a.p.log.Debug("Resync: cannot list containers", zap.Error(err))
		return false
	}
	now := a.p.clock.Now()
	seen := map[string]bool{}
	listed := map[string]phase{}
	for _, sb := range sbs.GetItems() {
		seen[sb.GetId()] = true
		listed[sb.GetId()] = sandboxPhase(sb.GetState())
		if a.known[sb.GetId()] == nil {
			a.known[sb.GetId()] = &item{sandbox: true, sandboxID: sb.GetId()}
		}
	}
	for _, c := range ctrs.GetContainers() {
		seen[c.GetId()] = true
		listed[c.GetId()] = containerPhase(c.GetState())
		if a.known[c.GetId()] == nil {
			a.known[c.GetId()] = &item{sandboxID: c.GetPodSandboxId()}
		}
	}
	first := !a.baseline
	a.baseline = true
	changed := 0
	// Sandboxes first, so a new sandbox is announced before its containers
	// and a removed one after them.
	ids := slices.Sorted(maps.Keys(a.known))
	for _, wantSandbox := range []bool{true, false} {
		for _, id := range ids {
			it := a.known[id]
			if it == nil || it.sandbox != wantSandbox {
				continue
			}
			cur, ok := listed[id]
			if !ok {
				cur = phaseGone
			}
			if first {
				// A listing shows no start time; a running container has
				// started, and an exited one is treated as having done so.
				it.phase, it.started = cur, cur >= phaseRunning
				if cur == phaseGone || cur == phaseNone {
					delete(a.known, id)
				}
				continue
			}
			if cur == it.phase {
				continue
			}
			changed++
			a.advance(id, it, cur, cur >= phaseRunning, now)
		}
	}
	p := a.p
	p.m.resyncs.Inc()
	p.log.Info("Resynchronised with the runtime", zap.Bool("baseline", first), zap.Int("sandboxes", len(sbs.GetItems())),
		zap.Int("containers", len(ctrs.GetContainers())), zap.Int("changed", changed))
	return true
}
