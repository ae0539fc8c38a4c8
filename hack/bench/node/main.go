//go:build linux

// Command node measures what probing costs the whole agent on a real node,
// probelet side by side with the real kubelet, in one run on the same pods:
// N static pods on a containerd test bed (hack/testbed), run by a
// standalone kubelet (hack/cluster/kubelet.sh), each with one readiness
// probe at period 1 s of one kind — TCP, HTTP GET, gRPC or exec — declared
// twice: as the kubelet's own probe and in the probelet.io/probes
// annotation. The agents take turns on the same pods: while the kubelet is
// measured probelet is not running, while probelet is measured the kubelet
// process is stopped (its containers keep running). Each agent's CPU per
// probe is its CPU time over a window minus its CPU time over the same
// window with the same N pods carrying no probes, divided by the probes it
// ran in the window (its own prober_probe_total). For each window it also
// reports the agent's RSS and its syscalls per probe (perf stat, over a
// shorter window after the CPU window, minus the no-probe rate). Needs root.
//
//	go run ./hack/bench/node [-pods 20,100] [-window 60s] [-kinds tcp,http,grpc,exec]
//
// CPU time is the agent's CLOCK_PROCESS_CPUTIME (user + system of every
// thread, exited ones included, in nanoseconds; /proc/PID/stat's utime and
// stime have the same sum in 10 ms ticks, too coarse for a short window).
// The runtime's own cost (containerd, shims, runc) is not counted: exec is
// the agent side only.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/probelet/probelet/quietio"
)

// config is the benchmark's shape.
type config struct {
	pods      []int
	kinds     []kind
	window    time.Duration
	parts     int
	rounds    int
	cpus      int
	settle    time.Duration
	kSettle   time.Duration
	sysWindow time.Duration
	probelet  string
	env       []string // extra environment of the probelet process
	ios       []string // probelet's --io modes, each kind measured in each
	keep      bool
	verbose   bool
	runtime   string // the test bed's: containerd or crio
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == appArg {
		if err := serveApp(); err != nil {
			fmt.Fprintln(os.Stderr, "node bench app:", err)
			os.Exit(1)
		}
		return
	}
	c, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "node bench:", err)
		os.Exit(2)
	}
	// hack/testbed's scripts take the runtime of a new bed from here.
	if err := os.Setenv("PROBELET_TESTBED_RUNTIME", c.runtime); err != nil {
		fmt.Fprintln(os.Stderr, "node bench:", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "node bench:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (config, error) {
	fs := flag.NewFlagSet("node", flag.ContinueOnError)
	var c config
	pods := fs.String("pods", "20,100", "pod counts to measure, comma-separated")
	kinds := fs.String("kinds", "tcp,http,grpc,exec", "probe kinds, comma-separated (tcp measures probelet twice: eBPF short-circuit and --tcp-mode dial)")
	fs.DurationVar(&c.window, "window", 60*time.Second, "CPU measurement window per agent and kind")
	fs.IntVar(&c.parts, "parts", 3, "parts of each window: the tables show the median per probe and the range over the parts")
	fs.IntVar(&c.rounds, "rounds", 2, "rounds per kind, alternating which agent is measured first (ABBA…); each agent's parts of every round are judged together")
	fs.IntVar(&c.cpus, "cpus", 0, "GOMAXPROCS of both agents, to emulate a larger node's P count (0: Go's default, one P per CPU of this machine)")
	fs.DurationVar(&c.settle, "settle", 10*time.Second, "wait after probelet starts probing every pod, before a window")
	fs.DurationVar(&c.kSettle, "kubelet-settle", 30*time.Second, "wait after the kubelet (re)started its pods, before a window (it does extra work for a while after a restart)")
	fs.DurationVar(&c.sysWindow, "syscall-window", 10*time.Second, "syscall counting window after each CPU window (0: none)")
	fs.StringVar(&c.probelet, "probelet", "", "probelet binary (default: built from this checkout)")
	fs.Func("probelet-env", "add `KEY=VALUE` to probelet's environment (repeatable), e.g. GOMAXPROCS=1", func(s string) error {
		if !strings.Contains(s, "=") {
			return fmt.Errorf("want KEY=VALUE, got %q", s)
		}
		c.env = append(c.env, s)
		return nil
	})
	ios := fs.String("io", quietio.Quiet, "probelet's --io modes, comma-separated: quiet,std measures each kind in both, side by side")
	fs.BoolVar(&c.keep, "keep", false, "keep the test bed and kubelet afterwards")
	fs.StringVar(&c.runtime, "runtime", "containerd", "the test bed's runtime: containerd or crio (the kubelet and probelet on it)")
	fs.BoolVar(&c.verbose, "v", false, "log each step to stderr")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	for _, s := range strings.Split(*pods, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 200 {
			return c, fmt.Errorf("-pods: %q is not a count between 1 and 200 (one /24 per bed)", s)
		}
		c.pods = append(c.pods, n)
	}
	for _, s := range strings.Split(*kinds, ",") {
		k, err := parseKind(strings.TrimSpace(s))
		if err != nil {
			return c, err
		}
		c.kinds = append(c.kinds, k)
	}
	for _, s := range strings.Split(*ios, ",") {
		io := strings.TrimSpace(s)
		if io != quietio.Quiet && io != quietio.Std {
			return c, fmt.Errorf("-io: %q is not %s or %s", s, quietio.Quiet, quietio.Std)
		}
		c.ios = append(c.ios, io)
	}
	switch {
	case c.runtime != "containerd" && c.runtime != "crio":
		return c, fmt.Errorf("-runtime %q: want containerd or crio", c.runtime)
	case c.window < time.Second:
		return c, fmt.Errorf("-window %v: want at least 1s", c.window)
	case c.parts < 1 || c.window/time.Duration(c.parts) < time.Second:
		return c, fmt.Errorf("-parts %d: want at least one part, each at least 1s long", c.parts)
	case c.rounds < 1 || c.cpus < 0:
		return c, fmt.Errorf("-rounds must be at least 1 and -cpus not negative")
	case c.settle < 0 || c.kSettle < 0 || c.sysWindow < 0:
		return c, fmt.Errorf("-settle, -kubelet-settle and -syscall-window must not be negative")
	}
	return c, nil
}

func run(ctx context.Context, c config) (err error) {
	if os.Geteuid() != 0 {
		return fmt.Errorf("needs root (it starts a containerd test bed and a kubelet)")
	}
	if c.cpus > 0 {
		// Inherited by the kubelet (started by hack/cluster/kubelet.sh)
		// and probelet alike.
		if err := os.Setenv("GOMAXPROCS", strconv.Itoa(c.cpus)); err != nil {
			return err
		}
	}
	e, err := startEnv(ctx, c)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := e.close(c.keep); err == nil {
			err = cerr
		}
	}()
	var reports []report
	for _, n := range c.pods {
		r, err := e.measureNode(ctx, n)
		if err != nil {
			return err
		}
		printReport(os.Stdout, c, r)
		reports = append(reports, r)
	}
	printSummary(os.Stdout, reports)
	if bad := shortCircuitShortfalls(reports); len(bad) > 0 {
		return fmt.Errorf("the short-circuit row measured dialing, not the short-circuit:\n  %s", strings.Join(bad, "\n  "))
	}
	return nil
}

// logf reports progress on stderr with -v.
func (e *env) logf(format string, args ...any) {
	if e.c.verbose {
		fmt.Fprintf(os.Stderr, "%s node bench: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
	}
}
