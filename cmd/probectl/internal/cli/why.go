package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	apiv1 "github.com/probelet/probelet/api/v1alpha1"
)

// whyOptions explains why a container is not started, not ready, or was
// restarted.
type whyOptions struct {
	*rootOptions
	output string
	refArg
}

// whyView is `probectl why -o json|yaml`.
type whyView struct {
	Container    containerView     `json:"container"`
	Explanations []explanationView `json:"explanations"`
}

type explanationView struct {
	Subject     string        `json:"subject"`
	Probe       string        `json:"probe,omitempty"`
	Text        string        `json:"text"`
	Consecutive int32         `json:"consecutive"`
	Threshold   int32         `json:"threshold"`
	LastRuns    []runView     `json:"lastRuns"`
	Restarts    []restartView `json:"restarts"`
}

func newWhyCommand(root *rootOptions) *cobra.Command {
	o := &whyOptions{rootOptions: root}
	cmd := &cobra.Command{
		Use:               "why CONTAINER",
		Short:             "Explain why a container is not started, not ready, or was restarted",
		Example:           "  probectl why default/web/app",
		Args:              argsRange(1, 1, "CONTAINER"),
		ValidArgsFunction: root.completeContainers,
		RunE:              runE(o),
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "output format: json or yaml")
	return cmd
}

// Validate checks the output format.
func (o *whyOptions) Validate() error {
	return validateOutput(o.output, outputTable, outputJSON, outputYAML)
}

// Run asks probelet and prints its answers.
func (o *whyOptions) Run(ctx context.Context) error {
	resp, err := call(ctx, o.rootOptions, apiv1.ProbeletClient.Why, &apiv1.WhyRequest{Container: o.ref})
	if err != nil {
		return err
	}
	v := newWhyView(resp)
	if o.output != outputTable {
		return printStructured(o.streams.Out, o.output, v)
	}
	printWhy(o.streams.Out, v)
	return nil
}

func newWhyView(resp *apiv1.WhyResponse) whyView {
	v := whyView{Container: newContainerView(resp.Container), Explanations: []explanationView{}}
	for _, x := range resp.Explanations {
		ev := explanationView{Subject: x.Subject, Probe: probeKey(x.ProbeType), Text: x.Text,
			Consecutive: x.Consecutive, Threshold: x.Threshold, LastRuns: []runView{}, Restarts: []restartView{}}
		for _, r := range x.LastRuns {
			ev.LastRuns = append(ev.LastRuns, newRunView(r))
		}
		for _, r := range x.Restarts {
			ev.Restarts = append(ev.Restarts, newRestartView(r))
		}
		v.Explanations = append(v.Explanations, ev)
	}
	return v
}

func printWhy(w io.Writer, v whyView) {
	c := v.Container
	fmt.Fprintf(w, "%s/%s/%s (%s)\n", c.PodNamespace, c.PodName, c.ContainerName, shortID(c.ContainerID, false))
	for _, x := range v.Explanations {
		fmt.Fprintf(w, "\n%s: %s\n", x.Subject, x.Text)
		if len(x.LastRuns) > 0 {
			fmt.Fprintf(w, "  last %s runs:\n", x.Probe)
			t := newTable(w)
			for _, r := range x.LastRuns {
				out := r.Output
				if r.Error != "" {
					out = "error (not counted): " + r.Error
				}
				t.row("    "+clockTime(r.Time), r.Result, r.Duration, orDash(oneLine(out, true)))
			}
			_ = t.flush()
		}
	}
}
