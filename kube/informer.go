package kube

import (
	"context"
	"time"

	"k8s.io/client-go/tools/cache"
)

// StopWait bounds how long shutdown waits for an informer to stop.
// client-go's reflector sleeps out a watch-list backoff (up to 30 s after
// an API server outage) without looking at its context (reflector.go,
// watchList); probelet's exit must not wait for it. This was the e2e's
// "probelet still running 15s after terminated" after the API server
// outage: its goroutine dump showed the budget informer in that sleep.
const StopWait = 2 * time.Second

// StartInformer runs inf until ctx ends. The returned wait blocks until
// ctx has ended and inf has stopped, or StopWait has passed since; a
// reflector still asleep then ends with the process.
func StartInformer(ctx context.Context, inf cache.SharedIndexInformer) (wait func()) {
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		inf.RunWithContext(ctx)
	}()
	return func() {
		<-ctx.Done()
		t := time.NewTimer(StopWait)
		defer t.Stop()
		select {
		case <-stopped:
		case <-t.C:
		}
	}
}
