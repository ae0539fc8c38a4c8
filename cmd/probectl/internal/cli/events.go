package cli

import (
	"context"
	"errors"
	"io"

	"github.com/spf13/cobra"

	apiv1 "github.com/probelet/probelet/api/v1alpha1"
)

const eventsLine = "%-8s  %-7s  %-12s  %-40s  %s\n"

// eventsOptions lists probe events (Unhealthy, ProbeWarning, Killing).
type eventsOptions struct {
	*rootOptions
	output string
	follow bool
	refArg
}

func newEventsCommand(root *rootOptions) *cobra.Command {
	o := &eventsOptions{rootOptions: root}
	cmd := &cobra.Command{
		Use:   "events [CONTAINER]",
		Short: "List probe events (Unhealthy, ProbeWarning, Killing), optionally following new ones",
		Long: `List the probe events probelet retains, oldest first; with --follow keep
printing new ones until interrupted. -o json prints a JSON array, or one
object per line with --follow.`,
		Example:           "  probectl events\n  probectl events default/web/app -f",
		Args:              argsRange(0, 1, "CONTAINER"),
		ValidArgsFunction: root.completeContainers,
		RunE:              runE(o),
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "output format: json")
	cmd.Flags().BoolVarP(&o.follow, "follow", "f", false, "keep printing new events")
	return cmd
}

// Validate checks the output format.
func (o *eventsOptions) Validate() error { return validateOutput(o.output, outputTable, outputJSON) }

// Run lists (and follows) events.
func (o *eventsOptions) Run(ctx context.Context) error {
	c, err := o.connect()
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.check(ctx); err != nil {
		return err
	}
	if !o.follow {
		return o.list(ctx, c)
	}
	stream, err := c.api.Events(ctx, &apiv1.EventsRequest{Container: o.ref, Follow: true})
	if err != nil {
		return c.explain(err)
	}
	o.header()
	return follow(ctx, c, stream.Recv, o.print)
}

// list gathers the retained events and prints them as a whole.
func (o *eventsOptions) list(ctx context.Context, c *client) error {
	ctx, cancel := c.unary(ctx)
	defer cancel()
	stream, err := c.api.Events(ctx, &apiv1.EventsRequest{Container: o.ref})
	if err != nil {
		return c.explain(err)
	}
	views := []eventView{}
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return c.explain(err)
		}
		views = append(views, newEventView(ev))
	}
	if o.output == outputJSON {
		return printStructured(o.streams.Out, outputJSON, views)
	}
	o.header()
	for _, v := range views {
		o.printView(v)
	}
	return nil
}

func (o *eventsOptions) header() {
	if o.output == outputTable {
		_ = printRow(o.streams.Out, eventsLine, "AGE", "TYPE", "REASON", "CONTAINER", "MESSAGE")
	}
}

func (o *eventsOptions) print(ev *apiv1.Event) error {
	v := newEventView(ev)
	if o.output == outputJSON {
		return printLine(o.streams.Out, v)
	}
	o.printView(v)
	return nil
}

func (o *eventsOptions) printView(v eventView) {
	_ = printRow(o.streams.Out, eventsLine, age(o.now(), v.Time), v.Type, v.Reason,
		v.PodNamespace+"/"+v.PodName+"/"+v.ContainerName, oneLine(v.Message, true))
}
