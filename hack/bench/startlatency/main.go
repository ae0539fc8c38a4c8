// Command startlatency measures, on a real containerd test bed, how soon a
// container's first probe starts after the container starts, for probelet
// (NRI events) side by side with a 1 s relist loop (the kubelet's
// GenericPLEG period) watching the same containers in the same run.
//
// For every container it records four instants on the node's wall clock:
// containerd's startedAt, the NRI PostStartContainer event as seen by an
// observer plugin registered ahead of probelet (index 00; NRI calls plugins
// one after another in index order, so probelet receives the event after
// it), the first probe run probelet records (its start time, from the
// socket API), and the relist loop's first ListContainers that shows the
// container running. It prints p50/p99/max of first probe − event and
// relist − event, and of both from startedAt. Needs root.
//
//	go run ./hack/bench/startlatency [-containers 40] [-pods 4]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// config is the benchmark's shape.
type config struct {
	containers int
	pods       int
	maxGap     time.Duration
	probelet   string
	keep       bool
}

func main() {
	var c config
	flag.IntVar(&c.containers, "containers", 40, "containers to start and measure")
	flag.IntVar(&c.pods, "pods", 4, "pods the containers are spread over")
	flag.DurationVar(&c.maxGap, "max-gap", 250*time.Millisecond, "largest random pause between two container starts (spreads them over the relist phase)")
	flag.StringVar(&c.probelet, "probelet", "", "probelet binary (default: built from this checkout)")
	flag.BoolVar(&c.keep, "keep", false, "keep the test bed and probelet running afterwards")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "startlatency:", err)
		os.Exit(1)
	}
}

func (c config) validate() error {
	switch {
	case os.Geteuid() != 0:
		return fmt.Errorf("needs root (it starts a containerd test bed)")
	case c.containers < 1 || c.pods < 1 || c.pods > c.containers:
		return fmt.Errorf("need at least one container and between 1 and -containers pods")
	case c.maxGap < 0:
		return fmt.Errorf("-max-gap must not be negative")
	}
	return nil
}

func run(ctx context.Context, c config) (err error) {
	if err := c.validate(); err != nil {
		return err
	}
	env, err := startEnv(ctx, c)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := env.close(c.keep); err == nil {
			err = cerr
		}
	}()
	samples, err := measure(ctx, c, env)
	if err != nil {
		return err
	}
	handoff, err := env.daemon.handoff(ctx)
	if err != nil {
		return err
	}
	printReport(os.Stdout, c, samples, handoff)
	return nil
}
