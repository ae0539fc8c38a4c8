package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	apiv1 "github.com/probelet/probelet/api/v1alpha1"
)

// historyOptions lists a container's recent probe runs.
type historyOptions struct {
	*rootOptions
	output string
	limit  int32
	probe  string
	refArg
}

// historyView is `history -o json|yaml`: the runs by probe, oldest first.
type historyView struct {
	ContainerID string               `json:"containerId"`
	Pod         string               `json:"pod"`
	Container   string               `json:"container"`
	Probes      map[string][]runView `json:"probes"`
}

func newHistoryCommand(root *rootOptions) *cobra.Command {
	o := &historyOptions{rootOptions: root}
	cmd := &cobra.Command{
		Use:   "history CONTAINER",
		Short: "List a container's recent probe runs: time, result, duration, how answered, output",
		Example: `  probectl history default/web/app
  probectl history default/web/app --probe readiness --limit 20`,
		Args:              argsRange(1, 1, "CONTAINER"),
		ValidArgsFunction: root.completeContainers,
		RunE:              runE(o),
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "output format: json or yaml")
	cmd.Flags().Int32Var(&o.limit, "limit", 10, "recent runs per probe (0: all retained)")
	cmd.Flags().StringVar(&o.probe, "probe", "", "only this probe: liveness, readiness or startup")
	return cmd
}

// Validate checks flags.
func (o *historyOptions) Validate() error {
	if o.limit < 0 {
		return usageErrorf("--limit must not be negative")
	}
	switch o.probe {
	case "", "liveness", "readiness", "startup":
	default:
		return usageErrorf("--probe %q is not liveness, readiness or startup", o.probe)
	}
	return validateOutput(o.output, outputTable, outputJSON, outputYAML)
}

// Run fetches the container and prints its runs.
func (o *historyOptions) Run(ctx context.Context) error {
	resp, err := call(ctx, o.rootOptions, apiv1.ProbeletClient.GetContainer,
		&apiv1.GetContainerRequest{Container: o.ref, HistoryLimit: o.limit})
	if err != nil {
		return err
	}
	c := resp.Container
	v := historyView{ContainerID: c.ContainerId, Pod: c.PodNamespace + "/" + c.PodName, Container: c.ContainerName,
		Probes: map[string][]runView{}}
	var order []string
	for _, p := range c.Probes {
		key := probeKey(p.Type)
		if o.probe != "" && key != o.probe {
			continue
		}
		runs := []runView{}
		for _, r := range p.History {
			runs = append(runs, newRunView(r))
		}
		v.Probes[key] = runs
		order = append(order, key)
	}
	if o.output != outputTable {
		return printStructured(o.streams.Out, o.output, v)
	}
	return printHistory(o.streams.Out, v, order)
}

func printHistory(w io.Writer, v historyView, order []string) error {
	fmt.Fprintf(w, "%s/%s (%s)\n", v.Pod, v.Container, shortID(v.ContainerID, false))
	if len(order) == 0 {
		fmt.Fprintln(w, "\nno probes")
		return nil
	}
	for _, key := range order {
		fmt.Fprintf(w, "\n%s:\n", key)
		runs := v.Probes[key]
		if len(runs) == 0 {
			fmt.Fprintln(w, "  not run yet")
			continue
		}
		t := newTable(w, "  TIME", "RESULT", "DURATION", "METHOD", "OUTPUT")
		for _, r := range runs {
			out := r.Output
			if r.Error != "" {
				out = "error (not counted): " + r.Error
			}
			t.row("  "+clockTime(r.Time), r.Result, r.Duration, orDash(r.Method), orDash(oneLine(out, true)))
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	return nil
}
