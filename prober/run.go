package prober

import (
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/results"
	"github.com/probelet/probelet/probespec"
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
	o := m.probe(w)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.finish(w, o)
}

// probe runs w's probe without the lock: the job dispatch gave it is w's
// alone while it is in flight.
func (m *Manager) probe(w *worker) outcome {
	j := &w.job
	o := outcome{start: m.clock.Now()}
	switch {
	case j.pending != nil:
		// Begun by the scheduling goroutine, and timed from its connect:
		// the hand-over to this runner is part of the probe's time.
		// Finish also releases it when ctx has ended meanwhile.
		o.start = j.begun
		o.result, o.output, o.method, o.err = j.pending.Finish(j.ctx)
	case j.ctx.Err() == nil:
		o.result, o.output, o.method, o.err = m.handlers.runWithRetries(j.ctx, j.target)
	}
	o.duration = m.clock.Since(o.start)
	return o
}

// finish records a run and puts the worker back on the schedule. A run for
// a container the worker has since left, or of a stopped worker, is dropped.
func (m *Manager) finish(w *worker, o outcome) {
	w.inFlight = false
	w.quick = o.duration < quickRun
	m.inflight--
	if !w.stopped {
		if m.current(w, w.job.containerID) {
			m.record(w, o)
		}
		m.sched.reschedule(w)
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

// record applies one run — the second half of the kubelet's doProbe: the
// worker judges it, the Manager reports it (logs, events, metrics), the
// worker keeps it and counts it, and the Manager publishes and acts.
func (m *Manager) record(w *worker, o outcome) {
	j := w.judge(o)
	m.report(w, o, j)
	w.remember(o, j)
	if !j.counted {
		return
	}
	publish, kill := w.settle(j.result)
	if w.pending != nil && j.result == results.Failure {
		if fo, ok := m.killer.(FailureObserver); ok {
			fo.ProbeFailed(w.pending.containerID, m.clock.Now())
		}
	}
	if w.onHold && w.pending != nil && w.pending.deferred != "" {
		// The killer holds this container's kill back: keep probing, so
		// a recovery can cancel it.
		w.onHold, w.resultRun = false, 0
	}
	if publish {
		m.publish(w, j.result, o.output)
		if j.result == results.Success {
			m.recovered(w)
		}
	}
	if kill {
		m.act(w, o.output)
	}
}

// report logs a run at the kubelet's levels, emits its event and counts it.
func (m *Manager) report(w *worker, o outcome, j judgement) {
	switch {
	case !j.counted:
		m.log.Info("Probe errored", m.fields(w, zap.Error(o.err))...)
		m.metrics.discarded(w.typ)
	case j.result == results.Failure && j.reason != "":
		m.log.Info("Probe failed", m.fields(w, zap.String("probeResult", "failure"), zap.String("output", o.output))...)
	case j.result == results.Failure:
		m.log.Debug("Probe unknown without error", m.fields(w)...)
	case j.reason != "":
		m.log.Debug("Probe succeeded with a warning", m.fields(w, zap.String("output", o.output))...)
	case m.log.Core().Enabled(zapcore.DebugLevel):
		m.log.Debug("Probe succeeded", m.fields(w)...)
	}
	if j.reason != "" {
		m.emit(m.eventOf(w, probespec.EventWarning, j.reason, j.message))
	}
	if j.metric != "" {
		w.metrics.count(j.metric)
	}
	if j.observe {
		w.metrics.observe(o.duration)
	}
}
