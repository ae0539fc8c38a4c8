package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	apiv1 "github.com/probelet/probelet/api/v1alpha1"
)

// watchLine is the column layout of streamed rows (no tabwriter: rows
// are printed as they arrive).
const watchLine = "%-8s  %-40s  %-9s  %-7s  %s\n"

// watchOptions streams result changes as they happen.
type watchOptions struct {
	*rootOptions
	output string
	refArg
}

func newWatchCommand(root *rootOptions) *cobra.Command {
	o := &watchOptions{rootOptions: root}
	cmd := &cobra.Command{
		Use:   "watch [CONTAINER]",
		Short: "Stream probe result changes as they happen",
		Long: `Stream every change of a published probe result (readiness flipping,
liveness failing) until interrupted. -o json prints one JSON object per line.`,
		Example:           "  probectl watch\n  probectl watch default/web/app -o json",
		Args:              argsRange(0, 1, "CONTAINER"),
		ValidArgsFunction: root.completeContainers,
		RunE:              runE(o),
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "output format: json (one object per line)")
	return cmd
}

// Validate checks the output format.
func (o *watchOptions) Validate() error { return validateOutput(o.output, outputTable, outputJSON) }

// Run streams until the context ends.
func (o *watchOptions) Run(ctx context.Context) error {
	c, err := o.connect()
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.check(ctx); err != nil {
		return err
	}
	stream, err := c.api.WatchResults(ctx, &apiv1.WatchResultsRequest{Container: o.ref})
	if err != nil {
		return c.explain(err)
	}
	if o.output == outputTable {
		_ = printRow(o.streams.Out, watchLine, "TIME", "CONTAINER", "PROBE", "RESULT", "OUTPUT")
	}
	return follow(ctx, c, stream.Recv, func(rc *apiv1.ResultChange) error {
		v := newResultChangeView(rc)
		if o.output == outputJSON {
			return printLine(o.streams.Out, v)
		}
		return printRow(o.streams.Out, watchLine, clockTime(v.Time),
			v.PodNamespace+"/"+v.PodName+"/"+v.ContainerName, v.Probe, v.Result, oneLine(v.Output, false))
	})
}

// follow prints stream messages until the stream or ctx ends. An
// interrupt is a normal end; the server giving up on a slow reader is not.
func follow[M any](ctx context.Context, c *client, recv func() (M, error), print func(M) error) error {
	for {
		m, err := recv()
		switch {
		case err == nil:
			if err := print(m); err != nil {
				return err
			}
		case errors.Is(err, io.EOF), ctx.Err() != nil:
			return nil
		case status.Code(err) == codes.ResourceExhausted:
			return fmt.Errorf("probelet ended the stream: %s", status.Convert(err).Message())
		default:
			return c.explain(err)
		}
	}
}
