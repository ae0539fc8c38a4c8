package plugin_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/probelet/probelet/internal/retry"
	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/plugin"
)

func TestRegistrationBackoffIsCappedExponential(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))
	reg := prometheus.NewRegistry()
	p, err := plugin.New(panickyCache{},
		plugin.WithSocketPath(filepath.Join(t.TempDir(), "absent.sock")),
		plugin.WithClock(clk), plugin.WithRegisterer(reg),
		plugin.WithBackoff(100*time.Millisecond, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()

	failures := func() float64 { return testutil.Metric(t, reg, "probelet_nri_registration_failures_total", nil) }
	testutil.WaitFor(t, "first attempt", func() bool { return failures() == 1 && clk.HasWaiters() })
	for i, wait := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		wait *= time.Millisecond
		clk.Step(wait - time.Millisecond)
		// A fake clock fires due waiters inside Step, so a shorter wait
		// would show as no waiter left.
		if !clk.HasWaiters() || failures() != float64(i+1) {
			t.Fatalf("attempt %d did not wait %s", i+2, wait)
		}
		// The jitter lengthens a wait by up to retry.Jitter, never more.
		clk.Step(time.Duration(float64(wait)*retry.Jitter) + time.Millisecond)
		testutil.WaitFor(t, "next attempt", func() bool { return failures() == float64(i+2) && clk.HasWaiters() })
	}
	if p.Connected() {
		t.Error("connected without a runtime")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
}
