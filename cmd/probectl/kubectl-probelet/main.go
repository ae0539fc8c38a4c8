// Command kubectl-probelet is the kubectl plugin `kubectl probelet`:
// probectl's why, describe, history and get for the pods of a namespace,
// through the probe-state API (probes.probelet.io), for people with
// kubectl and view rights rather than a shell on the node.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/utils/clock"

	"github.com/probelet/probelet/cmd/probectl/internal/cli"
	"github.com/probelet/probelet/cmd/probectl/internal/kubectl"
)

func main() {
	os.Exit(cli.ExitCode(run()))
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return cli.ExecuteKubectl(ctx, os.Args[1:],
		cli.IOStreams{Out: os.Stdout, ErrOut: os.Stderr},
		cli.Env{Lookup: os.LookupEnv, Clock: clock.RealClock{}}, kubectl.New())
}
