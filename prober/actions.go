package prober

import (
	"fmt"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/spec"
)

const (
	// defaultGracePeriod is the pod default when nothing says otherwise.
	defaultGracePeriod = 30 * time.Second
	// minGracePeriod is the least the kubelet gives a probe-failure kill.
	minGracePeriod = 2 * time.Second
)

// act handles a liveness or startup failure at threshold: the container is
// killed (asynchronously, never blocking the scheduler), or in report mode
// only reported.
func (m *Manager) act(w *worker, output string) {
	c, ok := w.pod.container(w.name)
	if !ok || c.ID != w.containerID {
		return
	}
	grace, err := gracePeriod(w.spec, &w.pod.pod)
	if err != nil {
		m.log.Warn("Unreadable pod grace period, using the default", m.fields(w, zap.Error(err))...)
	}
	kind := "liveness"
	if w.typ == probe.Startup {
		kind = "startup"
	}
	if m.action == ActionReport || m.killer == nil {
		why := "liveness action is report"
		if m.action != ActionReport {
			why = "no container killer configured"
		}
		msg := fmt.Sprintf("Container %s failed %s probe, would be restarted (%s)", w.name, kind, why)
		m.emit(w, eventNormal, reasonWouldRestart, msg, zap.String("output", output))
		return
	}
	msg := fmt.Sprintf("Container %s failed %s probe, will be restarted", w.name, kind)
	m.emit(w, eventNormal, reasonKilling, msg, zap.Duration("gracePeriod", grace))
	m.kill(w.pod, Restart{Time: m.clock.Now(), ContainerID: c.ID, ProbeType: w.typ, GracePeriod: grace, Message: msg}, w.name)
}

// kill records the restart and calls the killer on its own goroutine.
func (m *Manager) kill(pe *podEntry, r Restart, name string) {
	if pe.restarts == nil {
		pe.restarts = make(map[string][]Restart)
	}
	pe.restarts[name] = appendCapped(pe.restarts[name], r, max(m.historyLen, 1))
	m.killing++
	m.kills.Add(1)
	go func() {
		defer m.kills.Done()
		err := m.killer.KillContainer(m.ctx, r.ContainerID, r.GracePeriod, r.Message)
		m.mu.Lock()
		defer m.mu.Unlock()
		if err != nil {
			m.log.Error("Failed to kill container", zap.String("containerID", r.ContainerID), zap.Error(err))
			setRestartErr(pe.restarts[name], r, err)
		}
		m.killing--
		m.notifyIdle()
	}()
}

// gracePeriod is the kubelet's choice for a probe-failure kill: the
// probe's terminationGracePeriodSeconds, else the pod's (spec.PodGrace),
// else 30 s; never below 2 s. An unreadable annotation falls back to 30 s
// and is returned as err.
func gracePeriod(p *corev1.Probe, pod *node.Pod) (time.Duration, error) {
	secs, err := graceSeconds(p, pod)
	d := time.Duration(secs) * time.Second
	if secs < 0 {
		d = defaultGracePeriod
	}
	return max(d, minGracePeriod), err
}

// graceSeconds returns the configured grace in seconds, -1 when none is.
func graceSeconds(p *corev1.Probe, pod *node.Pod) (int64, error) {
	if p.TerminationGracePeriodSeconds != nil {
		return *p.TerminationGracePeriodSeconds, nil
	}
	v, err := spec.PodGrace(pod)
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

// setRestartErr stores a kill's error on its record, if still kept.
func setRestartErr(list []Restart, r Restart, err error) {
	for i := range list {
		if list[i].ContainerID == r.ContainerID && list[i].Time.Equal(r.Time) && list[i].ProbeType == r.ProbeType {
			list[i].Err = err.Error()
		}
	}
}
