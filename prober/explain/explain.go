// Package explain answers the troubleshooter's questions about one
// container — why is it not started, not ready, why was it restarted — from
// the engine's probe state, in words. The socket (probectl why) and the API
// server's events use the same answers.
package explain

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/results"
	"github.com/probelet/probelet/probespec"
)

// Subjects of explanations.
const (
	SubjectSpecRejected    = "spec rejected"
	SubjectNotRunning      = "not running"
	SubjectNotStarted      = "not started"
	SubjectNotReady        = "not ready"
	SubjectLivenessFailing = "liveness failing"
	SubjectKillDeferred    = "kill deferred"
	SubjectRestarted       = "restarted"
	SubjectHealthy         = "healthy"
)

// Runs is how many recent runs an explanation carries as evidence.
const Runs = 5

// Explanation is one answer.
type Explanation struct {
	// Subject is what is explained (Subject*).
	Subject string
	// ProbeType is the probe responsible, when HasProbe.
	ProbeType probespec.Type
	HasProbe  bool
	// Text is the answer in one or two sentences.
	Text string
	// Consecutive and Threshold are the run that decides (or will decide).
	Consecutive, Threshold int32
	// LastRuns are the probe's most recent runs, oldest first.
	LastRuns []prober.ProbeRecord
	// Restarts are the kills this probe issued, oldest first.
	Restarts []prober.Restart
}

// Subject is the container an explanation is about.
type Subject struct {
	// Namespace and Pod name the container's pod.
	Namespace, Pod string
	// Container is the container as the runtime reports it.
	Container node.Container
	// Status is its probe state; nil when the engine has none.
	Status *prober.ContainerStatus
}

// Container answers "why is this container not started / not ready / why
// was it restarted": the current state first (a healthy container gets one
// "healthy" answer), then the restarts its probes issued.
func Container(e Subject) []*Explanation {
	var out []*Explanation
	add := func(x *Explanation) {
		if x != nil {
			out = append(out, x)
		}
	}
	add(specRejected(e))
	add(notRunning(e))
	if e.Status != nil && e.Container.State == node.StateRunning {
		for _, x := range killDeferred(e) {
			add(x)
		}
		add(notStarted(e))
		add(notReady(e))
		add(livenessFailing(e))
	}
	if len(out) == 0 {
		out = append(out, healthy(e))
	}
	return append(out, restarted(e)...)
}

func specRejected(e Subject) *Explanation {
	if e.Status == nil || e.Status.SpecError == "" {
		return nil
	}
	return &Explanation{Subject: SubjectSpecRejected, Text: fmt.Sprintf(
		"the probes of container %q in pod %s/%s were rejected, so it runs unprobed: %s",
		e.Container.Name, e.Namespace, e.Pod, e.Status.SpecError)}
}

func notRunning(e Subject) *Explanation {
	var text string
	switch e.Container.State {
	case node.StateRunning:
		return nil
	case node.StateExited:
		text = fmt.Sprintf("the container exited with code %d%s; it is not ready and its probes wait for a new instance",
			e.Container.ExitCode, at(e.Container.FinishedAt))
	case node.StateCreated:
		text = "the container was created but has not started; probes begin once it runs"
	default:
		text = "probelet does not know the container's state"
	}
	return &Explanation{Subject: SubjectNotRunning, Text: text}
}

func notStarted(e Subject) *Explanation {
	ps, ok := e.Status.Probes[probespec.Startup]
	if e.Status.Started || !ok {
		return nil
	}
	x := probeExplanation(SubjectNotStarted, e.Status, probespec.Startup)
	switch {
	case ps.LastProbeTime.IsZero():
		x.Text = "the startup probe has not run yet" + delay(e.Status, probespec.Startup) +
			"; liveness and readiness wait until it succeeds"
	default:
		x.Text = fmt.Sprintf("the startup probe has failed %d of %d times in a row allowed (failureThreshold) — at %d the container is restarted; liveness and readiness wait until it succeeds%s",
			x.Consecutive, x.Threshold, x.Threshold, lastOutput(ps))
	}
	return x
}

func notReady(e Subject) *Explanation {
	if e.Status.Ready || !e.Status.Started {
		return nil
	}
	ps, ok := e.Status.Probes[probespec.Readiness]
	if !ok {
		return &Explanation{Subject: SubjectNotReady,
			Text: "the container has no readiness probe; it is not ready because it is not running or the pod is terminating"}
	}
	x := probeExplanation(SubjectNotReady, e.Status, probespec.Readiness)
	switch {
	case ps.LastProbeTime.IsZero():
		x.Text = "the readiness probe has not run yet" + delay(e.Status, probespec.Readiness) +
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

func livenessFailing(e Subject) *Explanation {
	ps, ok := e.Status.Probes[probespec.Liveness]
	if !ok || ps.LastProbeTime.IsZero() || lastRun(ps) == results.Success || ps.KillDeferred != "" {
		return nil
	}
	x := probeExplanation(SubjectLivenessFailing, e.Status, probespec.Liveness)
	if ps.OnHold {
		x.Text = fmt.Sprintf("the liveness probe failed %d times in a row (failureThreshold); the container is being stopped and will be restarted%s",
			x.Threshold, lastOutput(ps))
		return x
	}
	x.Text = fmt.Sprintf("the liveness probe has failed %d of %d times in a row allowed (failureThreshold) — at %d the container is restarted%s",
		x.Consecutive, x.Threshold, x.Threshold, lastOutput(ps))
	return x
}

// killDeferred explains kills the kill guard holds back, the guard's
// reason first ("node in FullDisruption, 18 of 20 liveness probes failing
// since 10:02:11").
func killDeferred(e Subject) []*Explanation {
	var out []*Explanation
	for _, t := range []probespec.Type{probespec.Liveness, probespec.Startup} {
		ps, ok := e.Status.Probes[t]
		if !ok || ps.KillDeferred == "" {
			continue
		}
		x := probeExplanation(SubjectKillDeferred, e.Status, t)
		x.Text = fmt.Sprintf("%s; the %s probe failed %d times in a row (failureThreshold) and keeps probing: the container is killed when the kill guard lets the kill through%s, and not at all if the probe succeeds first%s",
			ps.KillDeferred, t.Key(), x.Threshold, since(ps.KillDeferredSince), lastOutput(ps))
		out = append(out, x)
	}
	return out
}

func since(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return " (waiting since " + t.UTC().Format(time.TimeOnly) + ")"
}

// restarted explains the kills issued, one answer per probe type, newest
// restart described.
func restarted(e Subject) []*Explanation {
	if e.Status == nil {
		return nil
	}
	var out []*Explanation
	for _, t := range []probespec.Type{probespec.Liveness, probespec.Startup} {
		var rs []prober.Restart
		for _, r := range e.Status.Restarts {
			if r.ProbeType == t {
				rs = append(rs, r)
			}
		}
		if len(rs) == 0 {
			continue
		}
		x := probeExplanation(SubjectRestarted, e.Status, t)
		x.Consecutive = 0 // the current run is the new instance's, not the one that failed
		x.Restarts = rs
		x.Text = restartText(t, rs)
		out = append(out, x)
	}
	return out
}

func restartText(t probespec.Type, rs []prober.Restart) string {
	last := rs[len(rs)-1]
	text := fmt.Sprintf("the %s probe restarted the container %d time(s); last%s: container %s stopped with a %s grace period: %s",
		t.Key(), len(rs), at(last.Time), ShortID(last.ContainerID), last.GracePeriod, last.Message)
	if last.Err != "" {
		text += fmt.Sprintf(" (the stop failed: %s)", last.Err)
	}
	return text
}

func healthy(e Subject) *Explanation {
	if e.Status == nil || len(e.Status.Probes) == 0 {
		return &Explanation{Subject: SubjectHealthy,
			Text: "the container runs without probes (none declared in the probelet.io/probes annotation); it is ready while it runs"}
	}
	var parts []string
	for _, t := range e.Status.Configured() {
		ps := e.Status.Probes[t]
		parts = append(parts, fmt.Sprintf("%s %s", t.Key(), ps.Result))
	}
	return &Explanation{Subject: SubjectHealthy,
		Text: "the container runs, has started and is ready (" + strings.Join(parts, ", ") + ")"}
}

// probeExplanation fills the fields every probe answer shares.
func probeExplanation(subject string, st *prober.ContainerStatus, t probespec.Type) *Explanation {
	ps := st.Probes[t]
	x := &Explanation{
		Subject: subject, ProbeType: t, HasProbe: true,
		Consecutive: int32(ps.Consecutive), Threshold: ps.FailureThreshold,
	}
	runs := ps.History
	if len(runs) > Runs {
		runs = runs[len(runs)-Runs:]
	}
	x.LastRuns = slices.Clone(runs)
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

func delay(st *prober.ContainerStatus, t probespec.Type) string {
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

// ShortID is the 13-character form of a container ID that crictl prints.
func ShortID(id string) string {
	if len(id) > 13 {
		return id[:13]
	}
	return id
}
