package main

import (
	"context"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// relistPeriod is the kubelet's GenericPLEG relist period.
const relistPeriod = time.Second

// relister is the kubelet's way to learn about containers: list them all
// through CRI every second and diff. It records when each container was
// first listed running (the moment the list came back).
type relister struct {
	rt     runtimeapi.RuntimeServiceClient
	mu     sync.Mutex
	seen   map[string]time.Time
	errors int
	cancel context.CancelFunc
	done   chan struct{}
}

func startRelister(rt runtimeapi.RuntimeServiceClient) *relister {
	ctx, cancel := context.WithCancel(context.Background())
	r := &relister{rt: rt, seen: map[string]time.Time{}, cancel: cancel, done: make(chan struct{})}
	go r.loop(ctx)
	return r
}

func (r *relister) loop(ctx context.Context) {
	defer close(r.done)
	tick := time.NewTicker(relistPeriod)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			r.relist(ctx)
		}
	}
}

func (r *relister) relist(ctx context.Context) {
	resp, err := r.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	at := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.errors++
		return
	}
	for _, c := range resp.GetContainers() {
		if _, ok := r.seen[c.GetId()]; !ok && c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
			r.seen[c.GetId()] = at
		}
	}
}

// at is when the relist first saw the container running.
func (r *relister) at(id string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.seen[id]
	return t, ok
}

func (r *relister) stop() {
	r.cancel()
	<-r.done
}
