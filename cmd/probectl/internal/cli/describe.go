package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	apiv1 "github.com/probelet/probelet/api/v1alpha1"
)

// describeOptions shows everything probelet knows about one container.
type describeOptions struct {
	*rootOptions
	output  string
	history int32
	refArg
}

func newDescribeCommand(root *rootOptions) *cobra.Command {
	o := &describeOptions{rootOptions: root}
	cmd := &cobra.Command{
		Use:   "describe CONTAINER",
		Short: "Show a container's probe specs, state, recent runs, restarts and events",
		Example: `  probectl describe default/web/app
  probectl describe a1b2c3 -o yaml`,
		Args:              argsRange(1, 1, "CONTAINER"),
		ValidArgsFunction: root.completeContainers,
		RunE:              runE(o),
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "output format: json or yaml")
	cmd.Flags().Int32Var(&o.history, "history", 10, "recent runs to show per probe (0: all retained)")
	return cmd
}

// Validate checks flags.
func (o *describeOptions) Validate() error {
	if o.history < 0 {
		return usageErrorf("--history must not be negative")
	}
	return validateOutput(o.output, outputTable, outputJSON, outputYAML)
}

// Run fetches and prints the container.
func (o *describeOptions) Run(ctx context.Context) error {
	resp, err := call(ctx, o.rootOptions, apiv1.ProbeletClient.GetContainer,
		&apiv1.GetContainerRequest{Container: o.ref, HistoryLimit: o.history})
	if err != nil {
		return err
	}
	v := newDetailView(resp.Container, resp.Events)
	if o.output != outputTable {
		return printStructured(o.streams.Out, o.output, v)
	}
	return describe(o.streams.Out, o.now(), resp.Container, v)
}

// describe writes the human form, section by section.
func describe(w io.Writer, now time.Time, c *apiv1.Container, v detailView) error {
	t := newTable(w)
	t.row("Name:", v.ContainerName)
	t.row("Pod:", v.PodNamespace+"/"+v.PodName)
	t.row("Pod UID:", v.PodUID)
	t.row("Container ID:", v.ContainerID)
	t.row("Image:", v.Image)
	t.row("State:", stateWord(v.State))
	t.row("  Started at:", stamp(now, v.StartedAt))
	if c.State == apiv1.ContainerState_CONTAINER_STATE_EXITED {
		t.row("  Finished at:", stamp(now, timeOf(c.FinishedAt)))
		t.row("  Exit code:", fmt.Sprint(c.ExitCode))
	}
	t.row("Started:", yesNo(v.Started))
	t.row("Ready:", yesNo(v.Ready))
	if v.SpecError != "" {
		t.row("Spec error:", v.SpecError)
	}
	for _, p := range c.Probes {
		describeProbe(t, now, p)
	}
	if len(c.Probes) == 0 && v.SpecError == "" {
		t.row("Probes:", "none")
	}
	if err := t.flush(); err != nil {
		return err
	}
	describeRuns(w, c.Probes)
	describeRestarts(w, v.Restarts)
	describeEvents(w, now, v.Events)
	return nil
}

func describeProbe(t *table, now time.Time, p *apiv1.Probe) {
	name := strings.ToUpper(probeKey(p.Type)[:1]) + probeKey(p.Type)[1:] + ":"
	t.row(name, specLine(p.GetSpec()))
	pv := newProbeView(p)
	result := fmt.Sprintf("%s (current run: %d", pv.Result, pv.Consecutive)
	if pv.Method != "" {
		result += ", answered by " + pv.Method
	}
	result += ")"
	if pv.LastProbeTime == nil {
		// The kubelet's initial result, not an answer (a readiness probe
		// starts as Failure, a liveness probe as Success).
		result = pv.Result + " (not run yet)"
	}
	if pv.OnHold {
		result += ", on hold until the container restarts"
	}
	if pv.KillDeferred != "" {
		result += ", kill deferred: " + pv.KillDeferred
	}
	t.row("  Result:", result)
	if pv.Origin != "" {
		t.row("  Origin:", pv.Origin)
	}
	t.row("  Last probe:", stamp(now, pv.LastProbeTime))
	t.row("  Last output:", orDash(oneLine(pv.LastOutput, true)))
}

// specLine is kubectl's one-line probe summary, defaults applied.
func specLine(s *apiv1.ProbeSpec) string {
	if s == nil {
		return "-"
	}
	line := fmt.Sprintf("%s delay=%ds timeout=%ds period=%ds #success=%d #failure=%d",
		s.Handler, s.InitialDelaySeconds, s.TimeoutSeconds, s.PeriodSeconds, s.SuccessThreshold, s.FailureThreshold)
	if s.TerminationGracePeriodSeconds != nil {
		line += fmt.Sprintf(" terminationGracePeriod=%ds", *s.TerminationGracePeriodSeconds)
	}
	return line
}

func describeRuns(w io.Writer, probes []*apiv1.Probe) {
	fmt.Fprintln(w, "Recent runs:")
	t := newTable(w, "  PROBE", "TIME", "RESULT", "DURATION", "METHOD", "OUTPUT")
	n := 0
	for _, p := range probes {
		for _, r := range p.History {
			rv := newRunView(r)
			out := rv.Output
			if rv.Error != "" {
				out = "error (not counted): " + rv.Error
			}
			t.row("  "+probeKey(p.Type), clockTime(rv.Time), rv.Result, rv.Duration, orDash(rv.Method), orDash(oneLine(out, true)))
			n++
		}
	}
	if n == 0 {
		fmt.Fprintln(w, "  none")
		return
	}
	_ = t.flush()
}

func describeRestarts(w io.Writer, rs []restartView) {
	fmt.Fprintln(w, "Restarts issued:")
	if len(rs) == 0 {
		fmt.Fprintln(w, "  none")
		return
	}
	t := newTable(w, "  TIME", "PROBE", "CONTAINER ID", "GRACE", "MESSAGE")
	for _, r := range rs {
		msg := r.Message
		if r.Error != "" {
			msg += " (stop failed: " + r.Error + ")"
		}
		t.row("  "+stampShort(r.Time), r.Probe, shortID(r.ContainerID, false), r.GracePeriod, msg)
	}
	_ = t.flush()
}

func describeEvents(w io.Writer, now time.Time, evs []eventView) {
	fmt.Fprintln(w, "Events:")
	if len(evs) == 0 {
		fmt.Fprintln(w, "  none")
		return
	}
	t := newTable(w, "  AGE", "TYPE", "REASON", "MESSAGE")
	for _, e := range evs {
		t.row("  "+age(now, e.Time), e.Type, e.Reason, oneLine(e.Message, true))
	}
	_ = t.flush()
}

// stampShort is an absolute UTC time without the age.
func stampShort(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
