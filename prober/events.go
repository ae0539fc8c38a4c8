package prober

import "go.uber.org/zap"

// eventOf is an event about w's current container.
func (m *Manager) eventOf(w *worker, typ, reason, message string) Event {
	pod := &w.pod.pod
	return Event{
		Time: m.clock.Now(), Type: typ, Reason: reason, Message: message,
		PodUID: pod.UID, PodName: pod.Name, PodNamespace: pod.Namespace,
		ContainerName: w.name, ContainerID: w.containerID, ProbeType: w.typ,
		InitContainer: pod.API.IsInitContainer(w.name),
	}
}

// emit publishes ev to subscribers and logs it at info level with its
// message ("Liveness probe failed: ...").
func (m *Manager) emit(ev Event, extra ...zap.Field) {
	m.events.Publish(ev)
	fields := append([]zap.Field{
		zap.String("probeType", ev.ProbeType.String()),
		zap.String("pod", ev.PodNamespace+"/"+ev.PodName),
		zap.String("podUID", ev.PodUID),
		zap.String("containerName", ev.ContainerName),
		zap.String("containerID", ev.ContainerID),
		zap.String("reason", ev.Reason),
	}, extra...)
	m.log.Info(ev.Message, fields...)
}
