package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	apiv1 "github.com/probelet/probelet/api/v1alpha1"
)

// Table headers of ps.
var (
	psHeader     = []string{"POD", "CONTAINER", "STATE", "STARTED", "READY", "LIVENESS", "READINESS", "STARTUP", "AGE"}
	psWideHeader = []string{"CONTAINER ID", "POD", "CONTAINER", "STATE", "STARTED", "READY", "LIVENESS", "READINESS", "STARTUP", "AGE", "RESTARTS", "IMAGE", "MESSAGE"}
)

// probeOrder is the column order of probe types.
var probeOrder = []string{"liveness", "readiness", "startup"}

// psOptions lists containers with their probe results.
type psOptions struct {
	*rootOptions
	output  string
	quiet   bool
	noTrunc bool
	refArg
}

func newPsCommand(root *rootOptions) *cobra.Command {
	o := &psOptions{rootOptions: root}
	cmd := &cobra.Command{
		Use:   "ps [CONTAINER]",
		Short: "List containers with their probe results",
		Long: `List containers with their started/ready state and the published result of
each probe. CONTAINER narrows the list (ID prefix or pod name, pod/container or
namespace/pod, namespace/pod/container). -o json prints the contract documented in DESIGN.md.`,
		Example: `  probectl ps
  probectl ps -o wide
  probectl ps default/web -o json`,
		Args:              argsRange(0, 1, "CONTAINER"),
		ValidArgsFunction: root.completeContainers,
		RunE:              runE(o),
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "output format: wide, json or yaml")
	cmd.Flags().BoolVarP(&o.quiet, "quiet", "q", false, "print container IDs only")
	cmd.Flags().BoolVar(&o.noTrunc, "no-trunc", false, "do not truncate IDs and outputs")
	return cmd
}

// Validate checks the output flags.
func (o *psOptions) Validate() error {
	if err := validateOutput(o.output, outputTable, outputWide, outputJSON, outputYAML); err != nil {
		return err
	}
	if o.quiet && o.output != outputTable {
		return usageErrorf("--quiet and --output cannot be combined")
	}
	return nil
}

// Run lists and prints.
func (o *psOptions) Run(ctx context.Context) error {
	resp, err := call(ctx, o.rootOptions, apiv1.ProbeletClient.ListContainers, &apiv1.ListContainersRequest{Container: o.ref})
	if err != nil {
		return err
	}
	return o.print(resp.Containers)
}

func (o *psOptions) print(cs []*apiv1.Container) error {
	switch {
	case o.quiet:
		for _, c := range cs {
			fmt.Fprintln(o.streams.Out, c.ContainerId)
		}
		return nil
	case o.output == outputJSON || o.output == outputYAML:
		views := make([]containerView, 0, len(cs))
		for _, c := range cs {
			views = append(views, newContainerView(c))
		}
		return printStructured(o.streams.Out, o.output, views)
	}
	return o.printTable(cs)
}

func (o *psOptions) printTable(cs []*apiv1.Container) error {
	wide := o.output == outputWide
	header := psHeader
	if wide {
		header = psWideHeader
	}
	t := newTable(o.streams.Out, header...)
	for _, c := range cs {
		v := newContainerView(c)
		row := []string{v.PodNamespace + "/" + v.PodName, v.ContainerName, stateWord(v.State),
			yesNo(v.Started), yesNo(v.Ready)}
		for _, k := range probeOrder {
			row = append(row, probeCell(v.Probes, k, wide))
		}
		row = append(row, age(o.now(), v.CreatedAt))
		if wide {
			row = append([]string{shortID(v.ContainerID, o.noTrunc)}, row...)
			row = append(row, fmt.Sprint(v.RestartsIssued), shortImage(v.Image, o.noTrunc), orDash(oneLine(message(v), o.noTrunc)))
		}
		t.row(row...)
	}
	return t.flush()
}

// probeCell is "-" for an unconfigured probe, else its result; wide adds
// the current run and how it was answered ("Failure 3x http"), or that it
// has not run ("Failure (not run yet)": the kubelet's initial result). A kill the
// kill guard holds back is marked "(kill deferred)".
func probeCell(probes map[string]probeView, key string, wide bool) string {
	p, ok := probes[key]
	if !ok {
		return "-"
	}
	cell := p.Result
	switch {
	case wide && p.LastProbeTime == nil:
		cell += " (not run yet)"
	case wide:
		cell = fmt.Sprintf("%s %dx", p.Result, p.Consecutive)
		if p.Method != "" {
			cell += " " + p.Method
		}
	}
	if p.KillDeferred != "" {
		cell += " (kill deferred)"
	}
	return cell
}

// message is what a person should read first: a rejected spec, else the
// output of the first failing probe.
func message(v containerView) string {
	if v.Unavailable != "" {
		return v.Unavailable
	}
	if v.SpecError != "" {
		return "spec rejected: " + v.SpecError
	}
	for _, k := range probeOrder {
		if p, ok := v.Probes[k]; ok && p.KillDeferred != "" {
			return k + " kill deferred: " + p.KillDeferred
		}
	}
	for _, k := range probeOrder {
		if p, ok := v.Probes[k]; ok && p.Result == "Failure" && p.LastOutput != "" {
			return k + ": " + p.LastOutput
		}
	}
	return ""
}
