package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/probelet/probelet/cmd/probelet/agent"
	"github.com/probelet/probelet/cmd/probelet/criproxy"
	"github.com/probelet/probelet/plugin"
)

// daemonFunc runs the daemon; tests replace it to see the final Config.
type daemonFunc func(ctx context.Context, cfg agent.Config, stderr io.Writer) error

// newRootCommand builds `probelet` (the daemon) with its `version`,
// `validate`, `convert` and `cri-proxy` subcommands, writing to the given streams.
func newRootCommand(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	return newRootCommandWith(runDaemon, runValidate, criproxy.Run, stdin, stdout, stderr)
}

func newRootCommandWith(daemon daemonFunc, validate validateFunc, proxy criProxyFunc, stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	f := agent.NewFlags()
	cmd := &cobra.Command{
		Use:   "probelet",
		Short: "Container health probing for the node, next to containerd",
		Long: "probelet learns containers from containerd over NRI, runs their liveness, readiness and startup\n" +
			"probes (declared in the probelet.io/probes pod annotation) with the kubelet's semantics, and\n" +
			"serves the results on a CRI-style socket. Flags override the --config file.",
		Args: cobra.NoArgs,
		// main prints errors once; usage only for flag mistakes.
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.Config(cmd.Flags())
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return daemon(ctx, cfg, stderr)
		},
	}
	cmd.SetIn(stdin)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	f.Bind(cmd.Flags())
	cmd.CompletionOptions.DisableDefaultCmd = true
	cmd.AddCommand(newVersionCommand(), newValidateCommand(validate, stdin, stdout, stderr),
		newConvertCommand(stdin, stdout, stderr), newCRIProxyCommand(proxy, stderr))
	return cmd
}

// runDaemon builds the agent for cfg and runs it until ctx ends. When
// containerd launched probelet as a pre-installed NRI plugin, the rest of
// the configuration comes over NRI.
func runDaemon(ctx context.Context, cfg agent.Config, stderr io.Writer) error {
	opts := []agent.Option{agent.WithLogOutput(stderr)}
	if plugin.Launched() {
		opts = append(opts, agent.AsLaunchedPlugin())
	}
	a, err := agent.New(cfg, opts...)
	if err != nil {
		return err
	}
	defer func() { _ = a.Logger().Sync() }() // nothing to do about a failed flush at exit
	return a.Run(ctx)
}
