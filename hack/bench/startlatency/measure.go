package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	apiv1 "github.com/probelet/probelet/api/v1alpha1"
)

var errTimeout = errors.New("timed out")

// sample is one container's instants, all on the node's wall clock.
type sample struct {
	name       string
	id         string
	startedAt  time.Time // containerd's start of the container process
	event      time.Time // NRI PostStartContainer at the observer
	firstProbe time.Time // probelet's first probe run started
	relist     time.Time // the 1 s relist loop first listed it running
}

const (
	// collectTimeout bounds the wait for a container's first probe run.
	collectTimeout = 10 * time.Second
	collectEvery   = 100 * time.Millisecond
)

// measure starts the containers one by one and collects their samples.
func measure(ctx context.Context, c config, e *env) ([]sample, error) {
	if err := e.warmUp(ctx); err != nil {
		return nil, err
	}
	pods, err := e.runPods(ctx, c)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "starting %d containers in %d pods\n", c.containers, c.pods)
	samples := make([]sample, c.containers)
	var wg sync.WaitGroup
	errs := make(chan error, c.containers)
	for i := range samples {
		s := &samples[i]
		s.name = containerName(i)
		if s.id, err = e.createContainer(ctx, pods[i%len(pods)], s.name); err != nil {
			return nil, err
		}
		time.Sleep(gap(c.maxGap))
		if err := e.startContainer(ctx, s.id); err != nil {
			return nil, fmt.Errorf("start %s: %w", s.name, err)
		}
		wg.Go(func() {
			t, err := e.firstProbe(ctx, s.id)
			if err != nil {
				errs <- fmt.Errorf("%s: %w", s.name, err)
			}
			s.firstProbe = t
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	return samples, e.complete(ctx, samples)
}

func containerName(i int) string { return fmt.Sprintf("c%02d", i) }

// runPods runs the pods with the probes of the containers each will hold.
func (e *env) runPods(ctx context.Context, c config) ([]podRef, error) {
	names := make([][]string, c.pods)
	for i := range c.containers {
		names[i%c.pods] = append(names[i%c.pods], containerName(i))
	}
	pods := make([]podRef, c.pods)
	for i := range pods {
		var err error
		if pods[i], err = e.runPod(ctx, fmt.Sprintf("bench-%d", i), names[i]); err != nil {
			return nil, err
		}
	}
	return pods, nil
}

// warmUp runs one probed container first (connections, caches, the pod
// netns seen by eBPF) and makes sure probelet has run for more than a
// probe period: a younger agent spreads first probes over the period on
// purpose (the kubelet's restart jitter), which is not what is measured.
func (e *env) warmUp(ctx context.Context) error {
	pod, err := e.runPod(ctx, "warmup", []string{"warmup"})
	if err != nil {
		return err
	}
	id, err := e.createContainer(ctx, pod, "warmup")
	if err != nil {
		return err
	}
	if err := e.startContainer(ctx, id); err != nil {
		return err
	}
	_, err = e.firstProbe(ctx, id)
	return err
}

// firstProbe polls probelet's API until the container's readiness probe
// has a run and returns the first run's start time.
func (e *env) firstProbe(ctx context.Context, id string) (time.Time, error) {
	deadline := time.Now().Add(collectTimeout)
	for time.Now().Before(deadline) {
		resp, err := e.daemon.api.GetContainer(ctx, &apiv1.GetContainerRequest{Container: id})
		if err == nil {
			for _, p := range resp.GetContainer().GetProbes() {
				if h := p.GetHistory(); p.GetType() == apiv1.ProbeType_PROBE_TYPE_READINESS && len(h) > 0 {
					return h[0].GetTime().AsTime(), nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(collectEvery):
		}
	}
	return time.Time{}, fmt.Errorf("no probe run within %v: %w", collectTimeout, errTimeout)
}

// complete fills in containerd's start times, the NRI event times and the
// relist times (waiting for the relist loop to catch up).
func (e *env) complete(ctx context.Context, samples []sample) error {
	deadline := time.Now().Add(3 * relistPeriod)
	for i := range samples {
		s := &samples[i]
		var err error
		if s.startedAt, err = e.startedAt(ctx, s.id); err != nil {
			return err
		}
		var ok bool
		if s.event, ok = e.observer.at(s.id); !ok {
			return fmt.Errorf("%s: the NRI observer saw no PostStartContainer", s.name)
		}
		for s.relist, ok = e.relister.at(s.id); !ok; s.relist, ok = e.relister.at(s.id) {
			if time.Now().After(deadline) {
				return fmt.Errorf("%s: the relist loop never listed it running", s.name)
			}
			time.Sleep(collectEvery)
		}
	}
	return nil
}
