package prober

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/results"
	"github.com/probelet/probelet/probespec"
)

// The kubelet's per-probe rules, as methods of the worker that change only
// the worker's own state and return what the Manager must carry out
// (publish a result, log, emit an event, count, kill). They do no I/O and
// take no lock, so each rule is testable on a bare worker; the Manager
// calls them under its lock.

// verdict is what a worker's tick concluded.
type verdict int

const (
	// verdictWait: nothing to probe now; tick again next period.
	verdictWait verdict = iota
	// verdictProbe: run the probe.
	verdictProbe
	// verdictStop: the worker is done.
	verdictStop
)

// decision is what a tick decided, before any probe runs.
type decision struct {
	verdict verdict
	// publishes says the Manager publishes result now.
	publishes bool
	result    results.Result
	// note is a debug log line explaining the decision, if any.
	note string
}

// decide applies the kubelet's rules that come before a probe, in the
// kubelet's order (the worker already follows c): pod deletion (liveness
// and startup), on hold, not running (and, once exited, whether it will
// restart), initial delay, startup gating. started is whether c's startup
// probe succeeded (or it has none); restarts whether the kubelet keeps
// c's workers once it exited (restartsAfterExit).
func (w *worker) decide(c *node.Container, deleting, started, restarts bool, now time.Time) decision {
	switch {
	case deleting && w.typ != probespec.Readiness:
		return w.quietShutdown(c)
	case w.onHold:
		return decision{verdict: verdictWait}
	case !c.Running():
		d := decision{verdict: verdictWait, publishes: true, result: results.Failure}
		if c.State == node.StateExited && !restarts {
			// The kubelet's worker ends once its container terminated
			// and will not be restarted.
			d.verdict, d.note = verdictStop, "Container exited and will not be restarted, stopping probe worker"
		}
		return d
	case inInitialDelay(w.spec, w.startedAt(c, now), now):
		return decision{verdict: verdictWait}
	case (w.typ == probespec.Startup) == started:
		// Liveness and readiness probe only once the container has
		// started; the startup probe only until then.
		return decision{verdict: verdictWait}
	}
	return decision{verdict: verdictProbe}
}

// quietShutdown is the kubelet's pod-deletion rule for liveness and
// startup: a worker that would probe sets Success for a quiet shutdown;
// one on hold or whose container is not running just stops (the kubelet's
// StopLivenessAndStartup stops every such worker).
func (w *worker) quietShutdown(c *node.Container) decision {
	if w.onHold || !c.Running() {
		return decision{verdict: verdictStop, note: "Pod deletion requested, stopping probe worker"}
	}
	return decision{verdict: verdictStop, publishes: true, result: results.Success,
		note: "Pod deletion requested, setting probe result to success"}
}

// follow moves w to c when c is a new container instance: a hold is lifted
// and the last run's output, which would read as the new container's, is
// cleared (history keeps it, with its time). It returns the results key of
// the container w left (zero when w had none) and whether it moved.
func (w *worker) follow(c *node.Container) (left results.Key, moved bool) {
	if w.containerID == c.ID {
		return results.Key{}, false
	}
	if w.containerID != "" {
		left = w.key()
	}
	w.containerID = c.ID
	w.onHold = false
	w.seenRunning, w.seedDue = time.Time{}, time.Time{}
	w.lastProbe, w.lastOutput, w.method = time.Time{}, "", ""
	return left, true
}

// initialValue is the result seeded when the worker sees a new container.
func (w *worker) initialValue() results.Result {
	switch w.typ {
	case probespec.Liveness:
		return results.Success
	case probespec.Readiness:
		return results.Failure
	}
	return results.Unknown
}

// startedAt is c's start time for the initial delay. The runtime may not
// know it (NRI sends 0); then the delay counts from when the worker first
// saw c run, so a liveness probe never starts early.
func (w *worker) startedAt(c *node.Container, now time.Time) time.Time {
	if !c.StartedAt.IsZero() {
		return c.StartedAt
	}
	if w.seenRunning.IsZero() {
		w.seenRunning = now
	}
	return w.seenRunning
}

// inInitialDelay reports whether fewer whole seconds than the probe's
// initialDelaySeconds have passed since the container started. Integer
// division truncates like the kubelet's int32(Seconds()), without its
// float overflow, which made a zero start time look like -2^31 seconds.
func inInitialDelay(p *corev1.Probe, startedAt, now time.Time) bool {
	return int64(now.Sub(startedAt)/time.Second) < int64(p.InitialDelaySeconds)
}

// judgement is what one run amounts to, with what the Manager reports.
type judgement struct {
	result results.Result
	// counted is false for an errored run: it is discarded.
	counted bool
	// reason and message are the kubelet event to emit ("" for none).
	reason, message string
	// metric is the prober_probe_total result label ("" for none).
	metric string
	// observe is set when the run's duration goes into the histogram.
	observe bool
}

// judge maps a run to a result with the kubelet's events: a Warning is a
// Success with a ProbeWarning event, a Failure an Unhealthy event, an
// Unknown without error a silent Failure, an error a discarded run.
func (w *worker) judge(o outcome) judgement {
	typ := w.typ.String()
	switch {
	case o.err != nil:
		return judgement{result: results.Unknown, reason: probespec.EventUnhealthy,
			message: typ + " probe errored and resulted in unknown state: " + o.err.Error()}
	case o.result == probe.Success:
		return judgement{result: results.Success, counted: true, metric: resultSuccessful, observe: true}
	case o.result == probe.Warning:
		return judgement{result: results.Success, counted: true, metric: resultSuccessful, observe: true,
			reason: probespec.EventProbeWarning, message: typ + " probe warning: " + o.output}
	case o.result == probe.Failure:
		return judgement{result: results.Failure, counted: true, metric: resultFailed,
			reason: probespec.EventUnhealthy, message: typ + " probe failed: " + o.output}
	}
	return judgement{result: results.Failure, counted: true, metric: resultFailed}
}

// remember keeps the run for troubleshooting.
func (w *worker) remember(o outcome, j judgement) {
	w.lastProbe, w.lastOutput, w.method = o.start, o.output, o.method
	rec := ProbeRecord{Time: o.start, Result: j.result, Duration: o.duration, Output: o.output, Method: o.method}
	if !j.counted {
		rec.Result = results.Unknown
		rec.Error = o.err.Error()
		w.lastOutput = rec.Error
	}
	w.history.add(rec)
}

// settle counts a counted result toward the thresholds and reports whether
// it is published and whether the container must be killed. Publishing a
// liveness failure or any startup result puts the worker on hold until a
// new container.
func (w *worker) settle(r results.Result) (publish, kill bool) {
	if !w.count(r) {
		return false, false // below threshold: the published result stays
	}
	if w.typ == probespec.Startup || (w.typ == probespec.Liveness && r == results.Failure) {
		w.onHold, w.resultRun = true, 0
	}
	return true, r == results.Failure && w.typ != probespec.Readiness
}

// count adds r to the run of identical results and reports whether the run
// reached the threshold that publishes r.
func (w *worker) count(r results.Result) bool {
	if w.lastResult == r {
		w.resultRun++
	} else {
		w.lastResult, w.resultRun = r, 1
	}
	if r == results.Failure {
		return w.resultRun >= int(w.failureThreshold())
	}
	return w.resultRun >= int(w.successThreshold())
}
