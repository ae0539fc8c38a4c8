//go:build linux

// Command scale measures probelet's cluster side at the size of a large
// cluster, on a real kube-apiserver and etcd (hack/cluster) with simulated
// nodes: for each size, N Nodes in zones, each with a probelet (its Lease
// renewed by probelet's own heartbeat code, kube/heartbeat, through
// probelet's own client, kube.Client; up to -watches-up-to nodes its pod,
// namespace and PDB watches too) and, up to -kubelets-up-to nodes, a
// kubelet (its node Lease renewed every 10 s, its status patched every 5
// minutes, as the kubelet's defaults do), and P gated pods per node
// whose status the kubelet wrote and whose probelet.io/ready condition
// probelet wrote (the readiness writer's patch). Two probelet-controller
// replicas, built from this checkout, run against it. It prints, side by
// side for each size: the controller's CPU and RSS at steady state and
// through a leader change; the time from a node's probelet going silent to
// each of its pods marked; the zone rules holding back at 60 % of a zone
// silent; API calls per second by the controller and per node by probelet
// and by the kubelet, by verb and resource; the webhook's latency and the
// controller's memory through a churn of pod creates; and etcd's size and
// the API server's memory that probelet's objects take. Needs root.
//
//	go run ./hack/bench/scale [-nodes 1000,5000] [-pods-per-node 20] [-churn-rate 50] [-churn 5m]
//
// Its own generator rather than kwok: kwok's node and pod simulation
// writes the kubelet's status on its own schedule and runs no probelet,
// and what is measured here is probelet's real heartbeat and client next
// to a kubelet whose calls this program controls and counts.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/probelet/probelet/internal/checkout"
)

type config struct {
	nodes        []int
	perNode      int
	zones        int
	smallZone    int
	grace        time.Duration
	steady       time.Duration
	churnRate    int
	churn        time.Duration
	watchesUpTo  int
	kubeletsUpTo int
	controller   string
	keep         bool
	silentNodes  int
}

func main() {
	c, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "scale bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := bench(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "scale bench:", err)
		os.Exit(1)
	}
}

// bench builds the controller once and measures each size with it.
func bench(ctx context.Context, c config) error {
	root, err := checkout.Root()
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "scalebench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if c.controller == "" {
		logf("building probelet-controller")
		c.controller = filepath.Join(work, "probelet-controller")
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", c.controller, "./cmd/probelet-controller")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build: %w\n%s", err, out)
		}
	}
	var results []*result
	for _, n := range c.nodes {
		r, err := run(ctx, c, root, work, n)
		if r != nil {
			results = append(results, r)
			report(os.Stdout, c, results) // each size's table as it comes, what there is of it
		}
		if err != nil {
			return fmt.Errorf("at %d nodes: %w", n, err)
		}
	}
	return nil
}

func parseFlags(args []string) (config, error) {
	fs := flag.NewFlagSet("scale", flag.ContinueOnError)
	c := config{}
	nodes := fs.String("nodes", "1000,5000", "cluster sizes to measure, comma-separated; each gets a fresh control plane")
	fs.IntVar(&c.perNode, "pods-per-node", 20, "gated pods per node")
	fs.IntVar(&c.zones, "zones", 10, "zones the nodes spread over (region scale), besides the small zone")
	fs.IntVar(&c.smallZone, "small-zone", 40, "nodes of one more zone of no more than --large-cluster-size-threshold (50) nodes, where a partial disruption marks nothing")
	fs.DurationVar(&c.grace, "grace", 40*time.Second, "probelet-controller --grace-period")
	fs.DurationVar(&c.steady, "steady", 60*time.Second, "steady-state window")
	fs.IntVar(&c.churnRate, "churn-rate", 50, "pod creates per second through the webhook")
	fs.DurationVar(&c.churn, "churn", 5*time.Minute, "how long the creates go on")
	fs.IntVar(&c.silentNodes, "silent-nodes", 5, "nodes whose probelet goes silent, one per zone, for the time to mark")
	fs.IntVar(&c.kubeletsUpTo, "kubelets-up-to", 1000, "simulate each node's kubelet (its Lease and status) beside probelet at sizes up to this many nodes; above it the API server carries probelet's load alone (a 2-core machine's API server cannot carry both at 5,000 nodes; the kubelet's per-node rates do not depend on the size)")
	fs.IntVar(&c.watchesUpTo, "watches-up-to", 1000, "at sizes up to this many nodes each simulated probelet lists and watches its pods, the namespaces and the PDBs, as probelet does (at 5,000 nodes, 15,000 watches started within a renew interval took this machine's API server past 16 GiB and it stopped answering)")
	fs.StringVar(&c.controller, "controller", "", "probelet-controller binary (default: built from this checkout)")
	fs.BoolVar(&c.keep, "keep", false, "keep each size's control plane (its directory is printed)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	for _, s := range strings.Split(*nodes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < c.smallZone+c.zones*(c.silentNodes+3) {
			return c, fmt.Errorf("-nodes: %q is not a size of at least %d (the small zone and a few nodes per zone)", s, c.smallZone+c.zones*(c.silentNodes+3))
		}
		c.nodes = append(c.nodes, n)
	}
	if c.silentNodes > c.zones {
		return c, fmt.Errorf("-silent-nodes %d: at most one per zone (%d zones)", c.silentNodes, c.zones)
	}
	return c, nil
}

// logf says what the bench is doing, on stderr.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s scale bench: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}
