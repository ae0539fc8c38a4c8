package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/probelet/probelet/cmd/probelet/criproxy"
)

// criProxyFunc runs the CRI proxy; tests replace it to see the Config.
type criProxyFunc func(ctx context.Context, cfg criproxy.Config, stderr io.Writer) error

// newCRIProxyCommand builds `probelet cri-proxy`: the kubelet's CRI
// endpoint as its own process (see criproxy).
func newCRIProxyCommand(run criProxyFunc, stderr io.Writer) *cobra.Command {
	cfg := criproxy.Default()
	cmd := &cobra.Command{
		Use:   "cri-proxy --listen unix:///PATH",
		Short: "Serve the kubelet's CRI endpoint in front of containerd, as a process of its own",
		Long: "cri-proxy sits between the kubelet (--container-runtime-endpoint) and containerd: it forwards\n" +
			"every CRI call unchanged, answers the kubelet's relists from a memo of containerd's own answers\n" +
			"and serves GetContainerEvents. It runs apart from the prober daemon, so the kubelet's runtime never\n" +
			"depends on the prober's health. A socket passed by systemd (socket activation) for --listen is used.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return run(ctx, cfg, stderr)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&cfg.Listen, "listen", cfg.Listen, "the kubelet's --container-runtime-endpoint to serve, unix:///path (required)")
	fs.StringVar(&cfg.RuntimeEndpoint, "runtime-endpoint", cfg.RuntimeEndpoint, "containerd's CRI endpoint, unix:///path")
	fs.BoolVar(&cfg.Verify, "verify", cfg.Verify, "shadow mode: compare cached answers with the runtime's and count differences")
	fs.StringVar(&cfg.MetricsBindAddress, "metrics-bind-address", cfg.MetricsBindAddress, "HOST:PORT serving /metrics and /healthz; empty turns it off")
	fs.IntVar(&cfg.ExecOutputBudgetMiB, "exec-output-budget-mib", cfg.ExecOutputBudgetMiB, "with --exec-mode direct, the MiB of command output all ExecSync calls hold at once; a call printing more than 64 KiB waits for room (its command waits on its pipe) until its timeout")
	fs.StringVar(&cfg.IO, "io", cfg.IO, "who does the proxy's runtime I/O: quiet (raw system calls) or std (net)")
	fs.StringVar(&cfg.ExecMode, "exec-mode", cfg.ExecMode, "who runs the kubelet's ExecSync calls (exec probes, exec hooks): runtime (forwarded to containerd) or direct (probelet's exec helper, with the container's exact confinement; any call it cannot serve so goes to containerd)")
	fs.StringVar(&cfg.RuntimeStateDir, "runtime-state-dir", cfg.RuntimeStateDir, "containerd's state directory (its OCI bundles, for --exec-mode direct); empty: learned from containerd's CRI status, else /run/containerd")
	fs.StringVar(&cfg.ExecHelper, "exec-helper", cfg.ExecHelper, "the direct exec helper binary (default: probelet-exec next to probelet)")
	fs.StringVar(&cfg.LogFormat, "log-format", cfg.LogFormat, "console or json")
	fs.StringVar(&cfg.LogLevel, "log-level", cfg.LogLevel, "debug, info, warn or error")
	return cmd
}
