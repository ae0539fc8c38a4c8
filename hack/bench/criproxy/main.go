// Command criproxy measures, on one containerd test bed and in one run, a
// real kubelet (Evented PLEG on) talking to containerd directly and the
// same kubelet setup talking to it through probelet's CRI proxy:
//
//   - at N pods, over a steady window: containerd's CPU, the kubelet's own
//     kubelet_pleg_relist_duration_seconds, and (proxy) probelet's CPU;
//   - container exit → the kubelet's PLEG event (its "SyncLoop (PLEG)"
//     ContainerDied log line against containerd's finishedAt), before and
//     after a containerd restart.
//
// It prints both sides in one table. Needs root.
//
//	go run ./hack/bench/criproxy [-pods 100] [-window 30s] [-exits 10]
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

type config struct {
	pods   int
	window time.Duration
	exits  int
}

func main() {
	var c config
	flag.IntVar(&c.pods, "pods", 100, "pods the kubelet runs (the kubelet's default limit is 110)")
	flag.DurationVar(&c.window, "window", 30*time.Second, "steady-state window for CPU and relist durations")
	flag.IntVar(&c.exits, "exits", 10, "containers killed (before and after the containerd restart) for the exit latency")
	flag.Parse()
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "criproxy: needs root (it starts a containerd test bed and kubelets)")
		os.Exit(1)
	}
	if c.pods < c.exits+1 || c.exits < 1 || c.window <= 0 {
		fmt.Fprintln(os.Stderr, "criproxy: need -pods > -exits ≥ 1 and a positive -window")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r := &runner{}
	res, err := run(ctx, r, c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "criproxy:", err)
		os.Exit(1)
	}
	printReport(os.Stdout, c, res)
}

// run runs both phases and cleans up whatever happens.
func run(ctx context.Context, r *runner, c config) (res [2]phaseResult, err error) {
	defer r.cleanup()
	defer func() {
		if p := recover(); p != nil {
			f, ok := p.(fatal)
			if !ok {
				panic(p)
			}
			err = fmt.Errorf("%s", f.msg)
		}
	}()
	b := newBench(ctx, r, c)
	for i, mode := range []string{modeDirect, modeProxy} {
		if res[i], err = b.phase(mode); err != nil {
			return res, fmt.Errorf("%s: %w", mode, err)
		}
	}
	return res, nil
}
