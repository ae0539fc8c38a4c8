package kube_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/probelet/probelet/kube"
)

// sleepyInformer ignores its context, as client-go's reflector does while it
// sleeps out a watch-list backoff.
type sleepyInformer struct {
	cache.SharedIndexInformer
	running chan struct{}
}

func (s sleepyInformer) RunWithContext(context.Context) {
	close(s.running)
	select {}
}

func TestStartInformerDoesNotWaitForASleepingReflector(t *testing.T) {
	inf := sleepyInformer{running: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	wait := kube.StartInformer(ctx, inf)
	<-inf.running
	cancel()
	start := time.Now()
	wait()
	// wait returns after StopWait; the bound is loose above for a loaded machine.
	if d := time.Since(start); d < kube.StopWait || d > 10*kube.StopWait {
		t.Fatalf("wait returned after %v, want about %v", d, kube.StopWait)
	}
}
