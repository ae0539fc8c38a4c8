package prober

import "go.uber.org/zap"

// Event types and reasons, as the kubelet spells them.
const (
	eventNormal  = "Normal"
	eventWarning = "Warning"

	reasonUnhealthy    = "Unhealthy"
	reasonProbeWarning = "ProbeWarning"
	reasonKilling      = "Killing"
	// reasonWouldRestart is probelet's own: ActionReport's stand-in for Killing.
	reasonWouldRestart = "WouldRestart"
)

// emit publishes an event about w's container to subscribers and logs it
// at info level with its message ("Liveness probe failed: ...").
func (m *Manager) emit(w *worker, typ, reason, message string, extra ...zap.Field) {
	pod := &w.pod.pod
	m.events.Publish(Event{
		Time: m.clock.Now(), Type: typ, Reason: reason, Message: message,
		PodUID: pod.UID, PodName: pod.Name, PodNamespace: pod.Namespace,
		ContainerName: w.name, ContainerID: w.containerID, ProbeType: w.typ,
	})
	fields := append(m.fields(w, zap.String("containerID", w.containerID), zap.String("reason", reason)), extra...)
	m.log.Info(message, fields...)
}
