// Command probectl inspects probelet's container probes on this node
// through probelet's socket.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/utils/clock"

	"github.com/probelet/probelet/cmd/probectl/internal/cli"
)

func main() {
	os.Exit(cli.ExitCode(run()))
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return cli.Execute(ctx, os.Args[1:],
		cli.IOStreams{Out: os.Stdout, ErrOut: os.Stderr},
		cli.Env{Lookup: os.LookupEnv, Clock: clock.RealClock{}})
}
