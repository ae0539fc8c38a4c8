//go:build linux

// Command tcp compares kubelet-style TCP probe dials with probelet's eBPF
// short-circuit, side by side in one run: the cost of one probe (ns/op,
// allocs/op, sockets left after N probes) and a node simulation (thousands
// of probes at a 1 s period over listeners in many network namespaces) with
// the prober process's CPU in each mode. Needs root.
//
//	go run ./hack/bench/tcp [-window 15s] [-netns 50] [-listeners 1000] [-probes 3000]
//
// Linux only.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"
)

// config is the benchmark's shape.
type config struct {
	netns     int
	listeners int
	probes    int
	period    time.Duration
	window    time.Duration
	dials     int
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == serveArg {
		if err := serve(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "tcp bench server:", err)
			os.Exit(1)
		}
		return
	}
	var c config
	flag.IntVar(&c.netns, "netns", 50, "network namespaces (pods)")
	flag.IntVar(&c.listeners, "listeners", 1000, "listening sockets, spread over the namespaces")
	flag.IntVar(&c.probes, "probes", 3000, "TCP probes, spread over the listeners")
	flag.DurationVar(&c.period, "period", time.Second, "probe period")
	flag.DurationVar(&c.window, "window", 15*time.Second, "CPU measurement window per mode")
	flag.IntVar(&c.dials, "dials", 1000, "probes after which leftover sockets are counted")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "tcp bench:", err)
		os.Exit(1)
	}
}

func run(c config) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("needs root (eBPF, network namespaces)")
	}
	if c.netns < 1 || c.netns > 62 || c.listeners < c.netns || c.probes < 1 {
		return fmt.Errorf("need 1-62 netns, at least one listener per netns, at least one probe")
	}
	srv, err := startServer(c)
	if err != nil {
		return err
	}
	defer srv.stop()
	b, err := newBench(c, srv.pods)
	if err != nil {
		return err
	}
	defer b.close()
	per, err := b.perProbe()
	if err != nil {
		return err
	}
	printPerProbe(os.Stdout, c, per)
	sim, err := b.simulate()
	if err != nil {
		return err
	}
	printSimulation(os.Stdout, c, sim)
	return nil
}
