package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	apiv1 "github.com/probelet/probelet/api/v1alpha1"
	"github.com/probelet/probelet/internal/version"
)

// versionOptions prints probectl's and probelet's versions.
type versionOptions struct {
	*rootOptions
	clientOnly bool
}

func newVersionCommand(root *rootOptions) *cobra.Command {
	o := &versionOptions{rootOptions: root}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print probectl's version and the running probelet's",
		Args:  argsRange(0, 0, "arguments"),
		RunE:  runE(o),
	}
	cmd.Flags().BoolVar(&o.clientOnly, "client", false, "print probectl's version only")
	return cmd
}

// Complete has nothing to complete.
func (o *versionOptions) Complete([]string) error { return nil }

// Validate has nothing to validate.
func (o *versionOptions) Validate() error { return nil }

// Run prints the client version, then asks the server.
func (o *versionOptions) Run(ctx context.Context) error {
	fmt.Fprintf(o.streams.Out, "Client Version: %s\n", version.Version)
	if o.clientOnly {
		return nil
	}
	v, err := call(ctx, o.rootOptions, apiv1.ProbeletClient.Version, &apiv1.VersionRequest{})
	if err != nil {
		return err
	}
	fmt.Fprintf(o.streams.Out, "Server Version: %s\nAPI Version: %s\nNRI Connected: %t\n", v.Version, v.ApiVersion, v.NriConnected)
	if line := tcpProbesLine(v); line != "" {
		fmt.Fprintf(o.streams.Out, "TCP Probes: %s\n", line)
	}
	return nil
}

// tcpProbesLine says how the server answers TCP probes; "" from a server
// that does not say. A short-circuit that was asked for and did not load
// is spelled out with the load error: it is what an operator looks for.
func tcpProbesLine(v *apiv1.VersionResponse) string {
	asked := "--tcp-mode " + v.GetTcpModeRequested()
	switch mode := v.GetTcpMode(); {
	case v.GetTcpModeRequested() == "":
		return ""
	case mode == "":
		return "not yet (" + asked + ": the eBPF listener tracker is loading)"
	case mode == "ebpf":
		return "eBPF short-circuit (" + asked + ")"
	case v.GetTcpModeReason() != "":
		return "dial: the eBPF short-circuit is UNAVAILABLE (" + asked + "): " + v.GetTcpModeReason()
	default:
		return mode + " (" + asked + ")"
	}
}
