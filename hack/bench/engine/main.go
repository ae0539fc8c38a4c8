//go:build linux

// Command engine measures what the probe engine itself costs per probe on
// the real clock, real sockets and the Go runtime's default number of Ps:
// probelet's engine (prober.Manager with its real handlers) beside the
// kubelet's model of the same work (a goroutine per worker on its own
// ticker, calling the same handlers, results kept under a lock), against
// targets served by a separate process so that only the agents' side is
// counted. It isolates what the whole-node bench (hack/bench/node) cannot
// show quickly: the hand-offs between goroutines around the same dial,
// GET or RPC, counted as the voluntary context switches (a thread going to
// sleep, to be woken again) per probe. No root needed.
//
//	go run ./hack/bench/engine [-pods 20] [-kinds tcp,http,grpc] [-window 10s] [-rounds 2] [-cpus 0]
//
// Each agent runs in a process of its own (GOMAXPROCS=-cpus when set), the
// models alternate within each round (ABAB across rounds), and the table
// has the medians over rounds.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case serveArg:
			if err := serve(); err != nil {
				fmt.Fprintln(os.Stderr, "engine bench targets:", err)
				os.Exit(1)
			}
			return
		case agentArg:
			if err := agentMain(os.Args[2:]); err != nil {
				fmt.Fprintln(os.Stderr, "engine bench agent:", err)
				os.Exit(1)
			}
			return
		}
	}
	c, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "engine bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "engine bench:", err)
		os.Exit(1)
	}
}

type config struct {
	pods   int
	kinds  []string
	window time.Duration
	rounds int
	cpus   int
}

func parseFlags(args []string) (config, error) {
	fs := flag.NewFlagSet("engine", flag.ContinueOnError)
	var c config
	kinds := fs.String("kinds", "tcp,http,grpc", "probe kinds, comma-separated")
	fs.IntVar(&c.pods, "pods", 20, "workers (one probe each, period 1 s)")
	fs.DurationVar(&c.window, "window", 10*time.Second, "CPU window per agent, kind and round")
	fs.IntVar(&c.rounds, "rounds", 2, "rounds; the models' order alternates between them")
	fs.IntVar(&c.cpus, "cpus", 0, "GOMAXPROCS of both agents (0: the Go default, one P per CPU)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	for k := range strings.SplitSeq(*kinds, ",") {
		switch k {
		case "tcp", "http", "grpc":
			c.kinds = append(c.kinds, k)
		default:
			return c, fmt.Errorf("unknown kind %q", k)
		}
	}
	if c.pods < 1 || c.rounds < 1 || c.window < time.Second {
		return c, fmt.Errorf("need -pods ≥ 1, -rounds ≥ 1, -window ≥ 1s")
	}
	return c, nil
}

func run(ctx context.Context, c config) error {
	t, err := startTargets(ctx)
	if err != nil {
		return err
	}
	defer t.stop()
	models := []string{modelKubelet, modelProbelet}
	var all []sample
	for r := range c.rounds {
		for _, k := range c.kinds {
			order := models
			if r%2 == 1 {
				order = []string{models[1], models[0]}
			}
			for _, m := range order {
				s, err := runAgent(ctx, c, m, k, t.ports[k])
				if err != nil {
					return fmt.Errorf("%s %s: %w", m, k, err)
				}
				fmt.Fprintf(os.Stderr, "round %d %-4s %-8s %7.1f µs/probe %5.2f csw/probe (%d probes)\n",
					r+1, k, m, s.cpuPerProbe(), s.switchesPerProbe(), s.Probes)
				all = append(all, s)
			}
		}
	}
	report(os.Stdout, c, all)
	return nil
}

// sample is one agent process's window, as it reports it.
type sample struct {
	Model string `json:"model"`
	Kind  string `json:"kind"`
	Procs int    `json:"procs"`
	// CPU and voluntary context switches over the window, and over an
	// equal idle window before the workers were added.
	CPUNs         int64 `json:"cpuNs"`
	Switches      int64 `json:"switches"`
	IdleCPUNs     int64 `json:"idleCpuNs"`
	IdleSwitches  int64 `json:"idleSwitches"`
	Probes        int64 `json:"probes"`
	Failed        int64 `json:"failed"`
	WindowNs      int64 `json:"windowNs"`
	IdleWindowNs  int64 `json:"idleWindowNs"`
	MaxRSSKiB     int64 `json:"maxRssKiB"`
	GoroutinesEnd int   `json:"goroutinesEnd"`
}

func (s sample) idleScale() float64 { return float64(s.WindowNs) / float64(s.IdleWindowNs) }

func (s sample) cpuPerProbe() float64 {
	return (float64(s.CPUNs) - float64(s.IdleCPUNs)*s.idleScale()) / float64(s.Probes) / 1e3
}

func (s sample) switchesPerProbe() float64 {
	return (float64(s.Switches) - float64(s.IdleSwitches)*s.idleScale()) / float64(s.Probes)
}

func decode(out []byte) (sample, error) {
	var s sample
	if err := json.Unmarshal(out, &s); err != nil {
		return s, fmt.Errorf("agent report %q: %w", out, err)
	}
	if s.Probes == 0 {
		return s, fmt.Errorf("agent ran no probes")
	}
	if s.Failed > 0 {
		return s, fmt.Errorf("%d of %d probes did not succeed", s.Failed, s.Probes)
	}
	return s, nil
}
