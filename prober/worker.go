package prober

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/results"
	"github.com/probelet/probelet/probespec"
)

// worker is one probe of one container, keyed like the kubelet's by (pod
// UID, container name, probe type) so it outlives container restarts. It has no goroutine of its own:
// the scheduler decides when it runs and the pool runs its probes. Every
// field is guarded by Manager.mu except job, which belongs to the runner
// while inFlight is set.
type worker struct {
	pod    *podEntry
	name   string
	typ    probespec.Type
	spec   *corev1.Probe
	period time.Duration
	ctx    context.Context
	cancel context.CancelFunc

	// Scheduling: due is the worker's place on its period grid; gen and
	// queued tell which dueQueue entry is live.
	due      time.Time
	gen      uint32
	queued   bool
	inFlight bool
	rewake   bool
	stopped  bool
	// quick: the last probe took under quickRun, so the next may run on
	// the scheduling goroutine.
	quick bool

	// What the last UpdatePod showed, to wake the worker on a change.
	seenID       string
	seenState    node.ContainerState
	seenDeleting bool

	// The kubelet worker's state.
	containerID string
	lastResult  results.Result
	resultRun   int
	onHold      bool
	// seenRunning is when the worker first saw containerID run, used
	// only when the runtime gives no start time.
	seenRunning time.Time
	// seedDue is set while the seed of a container waits for its start
	// time (Manager.settleSeed): when it was first seen.
	seedDue time.Time

	// What troubleshooting reads.
	lastProbe  time.Time
	lastOutput string
	method     probe.Method
	// origin names where the probe connects from (target.originText).
	origin  string
	history history

	// pending is the kill this worker asked for, while the killer has it.
	pending *pendingKill

	// target is prepared for containerID; nil until the first probe and
	// after the pod's addresses change. It is never modified once made.
	target  *target
	job     job
	metrics workerMetrics
}

// job is what a runner probes with, taken under the lock at dispatch.
type job struct {
	ctx         context.Context
	containerID string
	target      *target
	// pending is a TCP probe the scheduling goroutine began at begun, for
	// the runner to finish instead of running the handler.
	pending probe.TCPPending
	begun   time.Time
}

// newWorker returns a worker for the probe of type t of container name,
// not yet scheduled.
func (m *Manager) newWorker(pe *podEntry, name string, t probespec.Type, p *corev1.Probe) *worker {
	w := &worker{
		pod:     pe,
		name:    name,
		typ:     t,
		spec:    p,
		period:  period(p),
		history: newHistory(m.historyLen),
	}
	w.ctx, w.cancel = context.WithCancel(m.ctx)
	w.metrics = m.metrics.forWorker(&pe.pod, name, t)
	if c, ok := pe.container(name); ok {
		w.seenID, w.seenState = c.ID, c.State
	}
	w.seenDeleting = pe.pod.Deleting
	return w
}

// key is the worker's results-cache key for its current container.
func (w *worker) key() results.Key {
	return results.Key{ContainerID: w.containerID, Type: w.typ}
}

// successThreshold and failureThreshold are the spec's, defaulted
// defensively like period.
func (w *worker) successThreshold() int32 {
	return positiveOr(w.spec.SuccessThreshold, probespec.DefaultSuccessThreshold)
}

func (w *worker) failureThreshold() int32 {
	return positiveOr(w.spec.FailureThreshold, probespec.DefaultFailureThreshold)
}

// period is the probe's period, defaulted defensively: a zero period would
// make the scheduler spin.
func period(p *corev1.Probe) time.Duration {
	return time.Duration(positiveOr(p.PeriodSeconds, probespec.DefaultPeriodSeconds)) * time.Second
}

// positiveOr returns v, or def when v is unset (or negative: specs that
// skipped validation must not stall or spin the worker).
func positiveOr(v, def int32) int32 {
	if v <= 0 {
		return def
	}
	return v
}

// pendingKill is a kill in the killer's hands.
type pendingKill struct {
	containerID string
	cancel      context.CancelFunc
	// deferred and since say why and since when the killer holds it back.
	deferred string
	since    time.Time
	// parked is set once deferred: the engine no longer counts the kill
	// as in flight (WaitIdle), since it may wait for minutes.
	parked bool
}
