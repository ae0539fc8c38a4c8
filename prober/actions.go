package prober

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/probespec"
)

const (
	// defaultGracePeriod is the pod default when nothing says otherwise.
	defaultGracePeriod = 30 * time.Second
	// minGracePeriod is the least the kubelet gives a probe-failure kill.
	minGracePeriod = 2 * time.Second
)

// act handles a liveness or startup failure at threshold: the container is
// killed (asynchronously, never blocking the scheduler), or in report mode
// only reported. Like the kubelet, which acts on a liveness failure only
// for a container that still runs, nothing happens to a container that is
// no longer the running instance the decision was about; the published
// Failure stays, and the worker waits on hold for the next instance.
func (m *Manager) act(w *worker, output string) {
	c, ok := w.pod.container(w.name)
	if !ok || c.ID != w.containerID || !c.Running() {
		m.log.Info("Not killing: the container no longer runs", m.fields(w, zap.String("containerID", w.containerID))...)
		return
	}
	if w.pending != nil {
		return // the killer has this container's kill already (it waits)
	}
	kind := "liveness"
	if w.typ == probespec.Startup {
		kind = "startup"
	}
	pod := &w.pod.pod
	msg, wholePod := killMessage(pod, w.name, kind)
	probe := w.spec
	if wholePod {
		probe = &corev1.Probe{} // the kubelet kills the pod for no probe: its grace is the pod's
	}
	secs, err := graceSeconds(probe, pod)
	if err != nil {
		m.log.Warn("Unreadable pod grace period, using the default", m.fields(w, zap.Error(err))...)
	}
	grace := graceOf(secs)
	if m.action == ActionReport || m.killer == nil {
		why := "liveness action is report"
		if m.action != ActionReport {
			why = "no container killer configured"
		}
		msg := fmt.Sprintf("Container %s failed %s probe, would be restarted (%s)", w.name, kind, why)
		m.emit(m.eventOf(w, probespec.EventNormal, probespec.EventWouldRestart, msg), zap.String("output", output))
		return
	}
	m.kill(w, Kill{
		PodUID: pod.UID, PodName: pod.Name, PodNamespace: pod.Namespace,
		ContainerName: w.name, ContainerID: c.ID, Pid: c.Pid, SandboxPid: pod.Pid, ProbeType: w.typ,
		InitContainer: pod.API.IsInitContainer(w.name),
		Decided:       m.clock.Now(), GracePeriod: max(grace, minGracePeriod), Reason: msg,
		PreStop: m.preStopHook(w.pod, c, grace),
	})
}

// killMessage is the kubelet's computePodActions for container name of
// pod failing its kind ("liveness", "startup") probe: the Killing message,
// and whether the kubelet kills the whole pod instead. A sidecar is an
// "Init container"; a container that will not be restarted (the pod's
// restartPolicy Never, or its own) loses ", will be restarted", and when no
// other container of the pod runs the kubelet kills the pod: the message is
// then its killContainer's default and the grace the pod's. Without the
// pod spec (node-only) the container is taken to restart.
func killMessage(pod *node.Pod, name, kind string) (msg string, wholePod bool) {
	api := pod.API
	sc := api.SpecContainer(name)
	switch {
	case sc == nil:
		return fmt.Sprintf("Container %s failed %s probe, will be restarted", name, kind), false
	case api.IsInitContainer(name):
		return fmt.Sprintf("Init container %s failed %s probe", name, kind), false
	}
	restart := api.Spec.RestartPolicy != corev1.RestartPolicyNever
	if sc.RestartPolicy != nil {
		restart = *sc.RestartPolicy != corev1.ContainerRestartPolicyNever
	}
	if restart {
		return fmt.Sprintf("Container %s failed %s probe, will be restarted", name, kind), false
	}
	for i := range api.Spec.Containers {
		if other := api.Spec.Containers[i].Name; other != name {
			if c, ok := pod.Container(other); ok && c.Running() {
				return fmt.Sprintf("Container %s failed %s probe", name, kind), false
			}
		}
	}
	return "Stopping container " + name, true
}

// kill hands k to the killer on its own goroutine and reads what the
// killer reports on another (the engine's): the restart is recorded and the
// Killing event emitted only when the killer issues the stop — a container
// found not running is not killed, and nothing says it was; a killer that
// holds the kill back says so (KillDeferred): the worker then keeps
// probing, and a recovery cancels the kill (recovered).
func (m *Manager) kill(w *worker, k Kill) {
	ctx, cancel := context.WithCancel(m.ctx)
	pk := &pendingKill{containerID: k.ContainerID, cancel: cancel}
	w.pending = pk
	m.killing++
	m.kills.Add(2)
	report := make(chan KillOutcome, 1)
	go func() {
		defer m.kills.Done()
		defer close(report)
		m.killer.KillContainer(ctx, k, report)
	}()
	go func() {
		defer m.kills.Done()
		issued := false
		for o := range report {
			issued = m.killOutcome(w, pk, k, o, issued)
		}
		cancel()
		m.mu.Lock()
		defer m.mu.Unlock()
		if w.pending == pk {
			w.pending = nil
		}
		if !pk.parked {
			m.killing--
		}
		m.notifyIdle()
	}()
}

// killOutcome applies one stage of w's kill pk; issued says whether the
// stop was issued before it, and is returned updated.
func (m *Manager) killOutcome(w *worker, pk *pendingKill, k Kill, o KillOutcome, issued bool) bool {
	pe := w.pod
	fields := func(more ...zap.Field) []zap.Field {
		return append([]zap.Field{zap.String("pod", k.PodNamespace+"/"+k.PodName), zap.String("containerName", k.ContainerName),
			zap.String("containerID", k.ContainerID), zap.String("probeType", k.ProbeType.String())}, more...)
	}
	switch o.Kind {
	case KillDeferred:
		m.deferred(w, pk, k, o.Reason)
	case KillIssued:
		m.mu.Lock()
		defer m.mu.Unlock()
		if pe.restarts == nil {
			pe.restarts = make(map[string][]Restart)
		}
		r := Restart{Time: m.clock.Now(), ContainerID: k.ContainerID, ProbeType: k.ProbeType, GracePeriod: k.GracePeriod, Message: k.Reason}
		pe.restarts[k.ContainerName] = appendCapped(pe.restarts[k.ContainerName], r, max(m.historyLen, 1))
		m.saveRestarts(k.PodUID, pe)
		m.emit(killEvent(k, r.Time), zap.Duration("gracePeriod", k.GracePeriod))
		return true
	case KillHookRan:
		m.hookRan(k, o.Hook)
	case KillCancelled:
		if m.ctx.Err() == nil {
			m.log.Info("Kill cancelled: the probe recovered while the kill waited", fields()...)
		}
	case KillNotRunning:
		m.log.Info("Not killing: the container exited on its own meanwhile", fields(zap.Error(o.Err))...)
	case KillFailed:
		m.log.Error("Failed to kill container", fields(zap.Error(o.Err))...)
		if issued {
			m.mu.Lock()
			defer m.mu.Unlock()
			setRestartErr(pe.restarts[k.ContainerName], k.ContainerID, o.Err)
			m.saveRestarts(k.PodUID, pe)
		}
	}
	return issued
}

// hookRan reports a kill's preStop hook as the kubelet's
// executePreStopHook and handler runner do: a failure is the Warning
// FailedPreStopHook on the container, without the error (it may carry
// what the hook sent; the log has it); an HTTPS hook that fell back to
// HTTP is the Warning LifecycleHTTPFallback on the pod.
func (m *Manager) hookRan(k Kill, r *HookResult) {
	if r == nil {
		return
	}
	fields := []zap.Field{zap.String("pod", k.PodNamespace+"/"+k.PodName), zap.String("containerName", k.ContainerName),
		zap.String("containerID", k.ContainerID), zap.Duration("took", r.Took)}
	now := m.clock.Now()
	if r.FellBackToHTTP != "" {
		ev := killEvent(k, now)
		ev.ContainerName, ev.ContainerID = "", ""
		ev.Type, ev.Reason = probespec.EventWarning, probespec.EventLifecycleHTTPFallback
		ev.Message = fmt.Sprintf("request to HTTPS lifecycle hook %s got HTTP response, retry with HTTP succeeded", r.FellBackToHTTP)
		m.emit(ev)
	}
	if r.Err == nil {
		m.log.Info("PreStop hook completed", fields...)
		return
	}
	m.log.Warn("PreStop hook failed", append(fields, zap.Error(r.Err))...)
	ev := killEvent(k, now)
	ev.Type, ev.Reason, ev.Message = probespec.EventWarning, probespec.EventFailedPreStopHook, "PreStopHook failed"
	m.emit(ev)
}

// killEvent is the kubelet's Killing event for k.
func killEvent(k Kill, at time.Time) Event {
	return Event{
		Time: at, Type: probespec.EventNormal, Reason: probespec.EventKilling, Message: k.Reason,
		PodUID: k.PodUID, PodName: k.PodName, PodNamespace: k.PodNamespace,
		ContainerName: k.ContainerName, ContainerID: k.ContainerID, ProbeType: k.ProbeType,
		InitContainer: k.InitContainer,
	}
}

// graceOf is the kubelet's grace for a probe-failure kill, from
// graceSeconds: 30 s when nothing says. The preStop hook gets it whole; the
// stop never gets less than 2 s (minGracePeriod).
func graceOf(secs int64) time.Duration {
	if secs < 0 {
		return defaultGracePeriod
	}
	return time.Duration(secs) * time.Second
}

// graceSeconds is the kubelet's choice for a probe-failure kill, in
// seconds: a requested deletion's grace, else the probe's
// terminationGracePeriodSeconds, else the pod's (spec.PodGrace); -1 when
// none is. An unreadable annotation gives -1 and err.
func graceSeconds(p *corev1.Probe, pod *node.Pod) (int64, error) {
	switch {
	case pod.API != nil && pod.API.DeletionGracePeriodSeconds != nil:
		// The kubelet's setTerminationGracePeriod: a requested deletion's
		// grace wins over everything.
		return *pod.API.DeletionGracePeriodSeconds, nil
	case p.TerminationGracePeriodSeconds != nil:
		return *p.TerminationGracePeriodSeconds, nil
	}
	v, err := probespec.PodGrace(pod)
	if err != nil || v == nil {
		return -1, err
	}
	return *v, nil
}

// appendCapped appends r, keeping only the newest n entries.
func appendCapped(list []Restart, r Restart, n int) []Restart {
	list = append(list, r)
	if len(list) > n {
		list = append(list[:0:0], list[len(list)-n:]...)
	}
	return list
}

// setRestartErr stores a kill's error on the newest record of its
// container instance, if still kept (an instance is killed once).
func setRestartErr(list []Restart, containerID string, err error) {
	for i := len(list) - 1; i >= 0; i-- {
		if list[i].ContainerID == containerID {
			list[i].Err = err.Error()
			return
		}
	}
}

// saveRestarts hands a copy of the pod's restarts to the history, if any.
// The caller holds m.mu.
func (m *Manager) saveRestarts(podUID string, pe *podEntry) {
	if m.history == nil {
		return
	}
	cp := make(map[string][]Restart, len(pe.restarts))
	for name, rs := range pe.restarts {
		cp[name] = slices.Clone(rs)
	}
	m.history.Save(podUID, cp)
}

// deferred records that the killer holds w's kill back, and lets the worker
// probe on (lifting the hold) so a recovery can cancel it. The first
// deferral is a KillDeferred event.
func (m *Manager) deferred(w *worker, pk *pendingKill, k Kill, reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if w.pending != pk || w.stopped {
		return
	}
	first := pk.deferred == ""
	pk.deferred = reason
	if !first {
		return
	}
	pk.since, pk.parked = m.clock.Now(), true
	m.killing--
	defer m.notifyIdle()
	ev := killEvent(k, pk.since)
	ev.Type, ev.Reason, ev.Message = probespec.EventWarning, probespec.EventKillDeferred, "Kill of container "+k.ContainerName+" deferred: "+reason
	m.emit(ev)
	if w.containerID == k.ContainerID && w.onHold {
		w.onHold, w.resultRun = false, 0
		m.sched.wake(w)
	}
}

// recovered cancels w's waiting kill after its probe succeeded again. The
// kill is forgotten at once, so the status stops showing it when the
// result changes, not when the killer's goroutine has returned.
func (m *Manager) recovered(w *worker) {
	if w.pending != nil && w.pending.deferred != "" {
		w.pending.cancel()
		w.pending = nil
	}
}
