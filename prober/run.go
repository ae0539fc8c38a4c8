package prober

import (
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/results"
)

// outcome is what one run of a probe's handler (with its retries) returned.
type outcome struct {
	start    time.Time
	duration time.Duration
	result   probe.Result
	output   string
	method   probe.Method
	err      error
}

// execute runs w's probe on a pool goroutine, then records it under the lock.
func (m *Manager) execute(w *worker) {
	j := &w.job
	o := outcome{start: m.clock.Now()}
	if j.ctx.Err() == nil {
		o.result, o.output, o.method, o.err = m.handlers.runWithRetries(j.ctx, j.target)
	}
	o.duration = m.clock.Since(o.start)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.finish(w, o)
}

// finish records a run and puts the worker back on the schedule. A run for
// a container the worker has since left, or of a stopped worker, is dropped.
func (m *Manager) finish(w *worker, o outcome) {
	w.inFlight = false
	m.inflight--
	if !w.stopped {
		if m.current(w, w.job.containerID) {
			m.record(w, o)
		}
		m.reschedule(w)
	}
	w.job = job{}
	m.notifyIdle()
}

// current reports whether id is still both the worker's container and the
// pod's: a run for a container that was replaced while it ran says nothing
// about the new one.
func (m *Manager) current(w *worker, id string) bool {
	c, ok := w.pod.container(w.name)
	return ok && c.ID == id && w.containerID == id
}

// record applies one run: events, metrics, history, thresholds, publish,
// hold and action — the second half of the kubelet's doProbe.
func (m *Manager) record(w *worker, o outcome) {
	r, counted := m.judge(w, o)
	m.remember(w, o, r, counted)
	if !counted {
		return
	}
	if !w.count(r) {
		return // below threshold: the published result stays
	}
	m.publish(w, r, o.output)
	if w.holdsAfter(r) {
		w.onHold, w.resultRun = true, 0
	}
	if r == results.Failure && w.typ != probe.Readiness {
		m.act(w, o.output)
	}
}

// judge maps a run to a result, with the kubelet's events and logs: a
// Warning is a Success with a ProbeWarning event, a Failure an Unhealthy
// event, an error is discarded (counted=false).
func (m *Manager) judge(w *worker, o outcome) (r results.Result, counted bool) {
	switch {
	case o.err != nil:
		m.log.Info("Probe errored", m.fields(w, zap.Error(o.err))...)
		m.emit(w, eventWarning, reasonUnhealthy, w.typ.String()+" probe errored and resulted in unknown state: "+o.err.Error())
		m.metrics.discarded(w.typ)
		return results.Unknown, false
	case o.result == probe.Success:
		if m.log.Core().Enabled(zapcore.DebugLevel) {
			m.log.Debug("Probe succeeded", m.fields(w)...)
		}
	case o.result == probe.Warning:
		m.log.Debug("Probe succeeded with a warning", m.fields(w, zap.String("output", o.output))...)
		m.emit(w, eventWarning, reasonProbeWarning, w.typ.String()+" probe warning: "+o.output)
	case o.result == probe.Failure:
		m.log.Info("Probe failed", m.fields(w, zap.String("probeResult", "failure"), zap.String("output", o.output))...)
		m.emit(w, eventWarning, reasonUnhealthy, w.typ.String()+" probe failed: "+o.output)
		w.metrics.count(resultFailed)
		return results.Failure, true
	default:
		// Unknown without an error: the kubelet counts it as a Failure, silently.
		m.log.Debug("Probe unknown without error", m.fields(w)...)
		w.metrics.count(resultFailed)
		return results.Failure, true
	}
	w.metrics.count(resultSuccessful)
	w.metrics.observe(o.duration)
	return results.Success, true
}

// remember keeps the run for troubleshooting.
func (m *Manager) remember(w *worker, o outcome, r results.Result, counted bool) {
	w.lastProbe, w.lastOutput, w.method = o.start, o.output, o.method
	rec := ProbeRecord{Time: o.start, Result: r, Duration: o.duration, Output: o.output, Method: o.method}
	if !counted {
		rec.Result = results.Unknown
		rec.Error = o.err.Error()
		w.lastOutput = rec.Error
	}
	w.history.add(rec)
}
