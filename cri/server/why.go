package server

import (
	"fmt"
	"strings"
	"time"

	apiv1 "github.com/probelet/probelet/api/v1alpha1"
	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/results"
)

// Subjects of explanations.
const (
	subjectSpecRejected    = "spec rejected"
	subjectNotRunning      = "not running"
	subjectNotStarted      = "not started"
	subjectNotReady        = "not ready"
	subjectLivenessFailing = "liveness failing"
	subjectRestarted       = "restarted"
	subjectHealthy         = "healthy"
)

// whyRuns is how many recent runs an explanation carries as evidence.
const whyRuns = 5

// explain answers "why is this container not started / not ready / why
// was it restarted": the current state first (a healthy container gets one
// "healthy" answer), then the restarts its probes issued.
func explain(e entry) []*apiv1.Explanation {
	var out []*apiv1.Explanation
	add := func(x *apiv1.Explanation) {
		if x != nil {
			out = append(out, x)
		}
	}
	add(specRejected(e))
	add(notRunning(e))
	if e.status != nil && e.ctr.State == node.StateRunning {
		add(notStarted(e))
		add(notReady(e))
		add(livenessFailing(e))
	}
	if len(out) == 0 {
		out = append(out, healthy(e))
	}
	return append(out, restarted(e)...)
}

func specRejected(e entry) *apiv1.Explanation {
	if e.status == nil || e.status.SpecError == "" {
		return nil
	}
	return &apiv1.Explanation{Subject: subjectSpecRejected, Text: fmt.Sprintf(
		"the probes of container %q in pod %s/%s were rejected, so it runs unprobed: %s",
		e.ctr.Name, e.namespace(), e.podName(), e.status.SpecError)}
}

func notRunning(e entry) *apiv1.Explanation {
	var text string
	switch e.ctr.State {
	case node.StateRunning:
		return nil
	case node.StateExited:
		text = fmt.Sprintf("the container exited with code %d%s; it is not ready and its probes wait for a new instance",
			e.ctr.ExitCode, at(e.ctr.FinishedAt))
	case node.StateCreated:
		text = "the container was created but has not started; probes begin once it runs"
	default:
		text = "probelet does not know the container's state"
	}
	return &apiv1.Explanation{Subject: subjectNotRunning, Text: text}
}

func notStarted(e entry) *apiv1.Explanation {
	ps, ok := e.status.Probes[probe.Startup]
	if e.status.Started || !ok {
		return nil
	}
	x := probeExplanation(subjectNotStarted, e.status, probe.Startup)
	switch {
	case ps.LastProbeTime.IsZero():
		x.Text = "the startup probe has not run yet" + delay(e.status, probe.Startup) +
			"; liveness and readiness wait until it succeeds"
	default:
		x.Text = fmt.Sprintf("the startup probe has failed %d of %d times in a row allowed (failureThreshold) — at %d the container is restarted; liveness and readiness wait until it succeeds%s",
			x.Consecutive, x.Threshold, x.Threshold, lastOutput(ps))
	}
	return x
}

func notReady(e entry) *apiv1.Explanation {
	if e.status.Ready || !e.status.Started {
		return nil
	}
	ps, ok := e.status.Probes[probe.Readiness]
	if !ok {
		return &apiv1.Explanation{Subject: subjectNotReady,
			Text: "the container has no readiness probe; it is not ready because it is not running or the pod is terminating"}
	}
	x := probeExplanation(subjectNotReady, e.status, probe.Readiness)
	switch {
	case ps.LastProbeTime.IsZero():
		x.Text = "the readiness probe has not run yet" + delay(e.status, probe.Readiness) +
			"; a container starts not ready"
	case lastRun(ps) == results.Success:
		x.Threshold = ps.SuccessThreshold
		x.Text = fmt.Sprintf("the readiness probe has succeeded %d of the %d times in a row it needs (successThreshold)",
			x.Consecutive, x.Threshold)
	case x.Consecutive >= x.Threshold:
		x.Text = fmt.Sprintf("the readiness probe failed %d times in a row, reaching its failureThreshold of %d; it needs %d success(es) in a row (successThreshold) to become ready%s",
			x.Consecutive, x.Threshold, ps.SuccessThreshold, lastOutput(ps))
	default:
		x.Text = fmt.Sprintf("the readiness probe's last %d run(s) failed; readiness stays Failure, its starting value, until %d success(es) in a row (successThreshold)%s",
			x.Consecutive, ps.SuccessThreshold, lastOutput(ps))
	}
	return x
}

func livenessFailing(e entry) *apiv1.Explanation {
	ps, ok := e.status.Probes[probe.Liveness]
	if !ok || ps.LastProbeTime.IsZero() || lastRun(ps) == results.Success {
		return nil
	}
	x := probeExplanation(subjectLivenessFailing, e.status, probe.Liveness)
	if ps.OnHold {
		x.Text = fmt.Sprintf("the liveness probe failed %d times in a row (failureThreshold); the container is being stopped and will be restarted%s",
			x.Threshold, lastOutput(ps))
		return x
	}
	x.Text = fmt.Sprintf("the liveness probe has failed %d of %d times in a row allowed (failureThreshold) — at %d the container is restarted%s",
		x.Consecutive, x.Threshold, x.Threshold, lastOutput(ps))
	return x
}

// restarted explains the kills issued, one answer per probe type, newest
// restart described.
func restarted(e entry) []*apiv1.Explanation {
	if e.status == nil {
		return nil
	}
	var out []*apiv1.Explanation
	for _, t := range []probe.Type{probe.Liveness, probe.Startup} {
		var rs []prober.Restart
		for _, r := range e.status.Restarts {
			if r.ProbeType == t {
				rs = append(rs, r)
			}
		}
		if len(rs) == 0 {
			continue
		}
		x := probeExplanation(subjectRestarted, e.status, t)
		x.Consecutive = 0 // the current run is the new instance's, not the one that failed
		for _, r := range rs {
			x.Restarts = append(x.Restarts, pbRestart(r))
		}
		x.Text = restartText(t, rs)
		out = append(out, x)
	}
	return out
}

func restartText(t probe.Type, rs []prober.Restart) string {
	last := rs[len(rs)-1]
	text := fmt.Sprintf("the %s probe restarted the container %d time(s); last%s: container %s stopped with a %s grace period: %s",
		t.Key(), len(rs), at(last.Time), shortID(last.ContainerID), last.GracePeriod, last.Message)
	if last.Err != "" {
		text += fmt.Sprintf(" (the stop failed: %s)", last.Err)
	}
	return text
}

func healthy(e entry) *apiv1.Explanation {
	if e.status == nil || len(e.status.Probes) == 0 {
		return &apiv1.Explanation{Subject: subjectHealthy,
			Text: "the container runs without probes (none declared in the probelet.io/probes annotation); it is ready while it runs"}
	}
	var parts []string
	for _, t := range configured(e.status) {
		ps := e.status.Probes[t]
		parts = append(parts, fmt.Sprintf("%s %s", t.Key(), ps.Result))
	}
	return &apiv1.Explanation{Subject: subjectHealthy,
		Text: "the container runs, has started and is ready (" + strings.Join(parts, ", ") + ")"}
}

// probeExplanation fills the fields every probe answer shares.
func probeExplanation(subject string, st *prober.ContainerStatus, t probe.Type) *apiv1.Explanation {
	ps := st.Probes[t]
	x := &apiv1.Explanation{
		Subject: subject, ProbeType: pbProbeType(t),
		Consecutive: int32(ps.Consecutive), Threshold: ps.FailureThreshold,
	}
	runs := ps.History
	if len(runs) > whyRuns {
		runs = runs[len(runs)-whyRuns:]
	}
	for _, r := range runs {
		x.LastRuns = append(x.LastRuns, pbRun(r))
	}
	return x
}

// lastRun is the result of the most recent counted run: the run that the
// consecutive count is a run of.
func lastRun(ps prober.ProbeStatus) results.Result {
	for i := len(ps.History) - 1; i >= 0; i-- {
		if r := ps.History[i]; r.Error == "" {
			return r.Result
		}
	}
	return ps.Result
}

func lastOutput(ps prober.ProbeStatus) string {
	if ps.LastOutput == "" {
		return ""
	}
	return "; last output: " + strings.TrimSpace(ps.LastOutput)
}

func delay(st *prober.ContainerStatus, t probe.Type) string {
	if sp := st.Spec.Get(t); sp != nil && sp.InitialDelaySeconds > 0 {
		return fmt.Sprintf(" (initialDelaySeconds %d)", sp.InitialDelaySeconds)
	}
	return ""
}

func at(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return " at " + t.UTC().Format(time.RFC3339)
}
