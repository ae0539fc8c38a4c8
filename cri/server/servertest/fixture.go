package servertest

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/results"
	"github.com/probelet/probelet/probespec"
)

// Now is the fixture's "now": every fixture time is relative to it.
var Now = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// Fixture IDs. Prefixes are distinct per container ("a1", "a2", "b1", "c1")
// except a1/a2, which share "a" to exercise ambiguity.
const (
	WebSandboxID  = "5a00000000000000000000000000000000000000000000000000000000000001"
	DNSSandboxID  = "5b00000000000000000000000000000000000000000000000000000000000002"
	JobSandboxID  = "5c00000000000000000000000000000000000000000000000000000000000003"
	WebAppID      = "a100000000000000000000000000000000000000000000000000000000000011"
	WebSidecarID  = "a200000000000000000000000000000000000000000000000000000000000012"
	DNSCoreID     = "b100000000000000000000000000000000000000000000000000000000000021"
	DNSCoreOldID  = "b000000000000000000000000000000000000000000000000000000000000020"
	JobWorkerID   = "c100000000000000000000000000000000000000000000000000000000000031"
	WebImage      = "registry.local/web:1.0"
	SidecarImage  = "registry.local/proxy:2.3"
	CoreDNSImage  = "registry.local/coredns@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	WorkerImage   = "registry.local/worker:0.9"
	JobSpecError  = "readinessProbe.periodSeconds: must be greater than or equal to 0"
	WebReadyError = "HTTP probe failed with statuscode: 503"
)

func ago(d time.Duration) time.Time { return Now.Add(-d) }

func int64p(v int64) *int64 { return &v }

// Pods returns the fixture's pods: default/web (app probed and not ready,
// sidecar unprobed), kube-system/dns (healthy after a liveness restart),
// batch/job (exited, spec rejected).
func Pods() []node.Pod {
	return []node.Pod{
		{
			UID: "uid-web", Name: "web", Namespace: "default", SandboxID: WebSandboxID,
			CreatedAt: ago(2 * time.Hour), Labels: map[string]string{"app": "web", "io.kubernetes.pod.name": "web"},
			Annotations: map[string]string{probespec.AnnotationProbes: `{"app":{}}`},
			IPs:         []string{"10.88.0.5", "fd00::5"}, NetNSPath: "/proc/4242/ns/net",
			TerminationGracePeriodSeconds: int64p(30),
			Containers: []node.Container{
				{ID: WebAppID, Name: "app", Image: WebImage, CreatedAt: ago(2 * time.Hour), Pid: 4250,
					State: node.StateRunning, StartedAt: ago(119 * time.Minute),
					Labels:      map[string]string{"io.kubernetes.container.name": "app"},
					Annotations: map[string]string{"io.kubernetes.container.restartCount": "0"}},
				{ID: WebSidecarID, Name: "sidecar", Image: SidecarImage, CreatedAt: ago(2 * time.Hour), Pid: 4260,
					State: node.StateRunning, StartedAt: ago(119 * time.Minute)},
			},
		},
		{
			UID: "uid-dns", Name: "dns", Namespace: "kube-system", SandboxID: DNSSandboxID,
			CreatedAt: ago(48 * time.Hour), Labels: map[string]string{"k8s-app": "dns"}, IPs: []string{"10.88.0.6"},
			Containers: []node.Container{
				{ID: DNSCoreID, Name: "coredns", Image: CoreDNSImage, CreatedAt: ago(30 * time.Minute), Pid: 5100,
					State: node.StateRunning, StartedAt: ago(30 * time.Minute),
					Annotations: map[string]string{"io.kubernetes.container.restartCount": "1"}},
			},
		},
		{
			UID: "uid-job", Name: "job", Namespace: "batch", SandboxID: JobSandboxID, Deleting: true,
			CreatedAt: ago(10 * time.Minute), IPs: []string{"10.88.0.7"},
			Containers: []node.Container{
				{ID: JobWorkerID, Name: "worker", Image: WorkerImage, CreatedAt: ago(10 * time.Minute),
					State: node.StateExited, StartedAt: ago(9 * time.Minute), FinishedAt: ago(time.Minute), ExitCode: 1},
			},
		},
	}
}

// Statuses returns the prober's state for the fixture's probed containers.
func Statuses() []prober.ContainerStatus {
	return []prober.ContainerStatus{webApp(), coreDNS(), jobWorker()}
}

func tcpProbe(port int, period int32) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(int32(port))}},
		TimeoutSeconds: 1, PeriodSeconds: period, SuccessThreshold: 1, FailureThreshold: 3}
}

func httpProbe(path string, port intstr.IntOrString) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: port, Scheme: corev1.URISchemeHTTP}},
		TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3}
}

func webApp() prober.ContainerStatus {
	startup := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/tmp/started"}}},
		TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 30}
	return prober.ContainerStatus{
		PodUID: "uid-web", PodName: "web", PodNamespace: "default", ContainerName: "app", ContainerID: WebAppID,
		State: node.StateRunning, StartedAt: ago(119 * time.Minute), Started: true, Ready: false,
		Spec: probespec.ContainerProbes{Liveness: tcpProbe(8080, 2), Readiness: httpProbe("/ready", intstr.FromString("http")), Startup: startup},
		Probes: map[probespec.Type]prober.ProbeStatus{
			probespec.Liveness: {Type: probespec.Liveness, Result: results.Success, Consecutive: 12, SuccessThreshold: 1, FailureThreshold: 3,
				LastProbeTime: ago(time.Second), Method: probe.MethodEBPF, Origin: "node",
				History: []prober.ProbeRecord{{Time: ago(time.Second), Result: results.Success, Duration: 4 * time.Microsecond, Method: probe.MethodEBPF}}},
			probespec.Readiness: {Type: probespec.Readiness, Result: results.Failure, Consecutive: 3, SuccessThreshold: 1, FailureThreshold: 3,
				LastProbeTime: ago(3 * time.Second), LastOutput: WebReadyError, Method: probe.MethodHTTP, Origin: "pod net:[4026532561]",
				History: []prober.ProbeRecord{
					{Time: ago(33 * time.Second), Result: results.Failure, Duration: 2 * time.Millisecond, Output: WebReadyError, Method: probe.MethodHTTP},
					{Time: ago(23 * time.Second), Result: results.Unknown, Duration: time.Second, Method: probe.MethodHTTP, Error: "dial tcp: lookup failed"},
					{Time: ago(13 * time.Second), Result: results.Failure, Duration: 3 * time.Millisecond, Output: WebReadyError, Method: probe.MethodHTTP},
					{Time: ago(3 * time.Second), Result: results.Failure, Duration: 3 * time.Millisecond, Output: WebReadyError, Method: probe.MethodHTTP},
				}},
			probespec.Startup: {Type: probespec.Startup, Result: results.Success, Consecutive: 1, SuccessThreshold: 1, FailureThreshold: 30,
				LastProbeTime: ago(118 * time.Minute), Method: probe.MethodExec,
				History: []prober.ProbeRecord{{Time: ago(118 * time.Minute), Result: results.Success, Duration: 15 * time.Millisecond, Method: probe.MethodExec}}},
		},
	}
}

func coreDNS() prober.ContainerStatus {
	svc := "dns"
	readiness := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 8181, Service: &svc}},
		TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3}
	liveness := httpProbe("/health", intstr.FromInt32(8080))
	liveness.TerminationGracePeriodSeconds = int64p(5)
	return prober.ContainerStatus{
		PodUID: "uid-dns", PodName: "dns", PodNamespace: "kube-system", ContainerName: "coredns", ContainerID: DNSCoreID,
		State: node.StateRunning, StartedAt: ago(30 * time.Minute), Started: true, Ready: true,
		Spec: probespec.ContainerProbes{Liveness: liveness, Readiness: readiness},
		Probes: map[probespec.Type]prober.ProbeStatus{
			probespec.Liveness: {Type: probespec.Liveness, Result: results.Success, Consecutive: 180, SuccessThreshold: 1, FailureThreshold: 3,
				LastProbeTime: ago(5 * time.Second), LastOutput: "", Method: probe.MethodHTTP,
				History: []prober.ProbeRecord{{Time: ago(5 * time.Second), Result: results.Success, Duration: time.Millisecond, Method: probe.MethodHTTP}}},
			probespec.Readiness: {Type: probespec.Readiness, Result: results.Success, Consecutive: 180, SuccessThreshold: 1, FailureThreshold: 3,
				LastProbeTime: ago(2 * time.Second), Method: probe.MethodGRPC,
				History: []prober.ProbeRecord{{Time: ago(2 * time.Second), Result: results.Success, Duration: 2 * time.Millisecond, Method: probe.MethodGRPC}}},
		},
		Restarts: []prober.Restart{{Time: ago(31 * time.Minute), ContainerID: DNSCoreOldID, ProbeType: probespec.Liveness,
			GracePeriod: 5 * time.Second, Message: "Container coredns failed liveness probe, will be restarted"}},
	}
}

func jobWorker() prober.ContainerStatus {
	return prober.ContainerStatus{
		PodUID: "uid-job", PodName: "job", PodNamespace: "batch", ContainerName: "worker", ContainerID: JobWorkerID,
		State: node.StateExited, StartedAt: ago(9 * time.Minute), SpecError: JobSpecError,
	}
}

// Events returns probe events of the fixture, oldest first.
func Events() []prober.Event {
	return []prober.Event{
		{Time: ago(32 * time.Minute), Type: "Warning", Reason: "Unhealthy", Message: "Liveness probe failed: HTTP probe failed with statuscode: 500\n",
			PodUID: "uid-dns", PodName: "dns", PodNamespace: "kube-system", ContainerName: "coredns", ContainerID: DNSCoreOldID, ProbeType: probespec.Liveness},
		{Time: ago(31 * time.Minute), Type: "Normal", Reason: "Killing", Message: "Container coredns failed liveness probe, will be restarted",
			PodUID: "uid-dns", PodName: "dns", PodNamespace: "kube-system", ContainerName: "coredns", ContainerID: DNSCoreOldID, ProbeType: probespec.Liveness},
		{Time: ago(3 * time.Second), Type: "Warning", Reason: "Unhealthy", Message: "Readiness probe failed: " + WebReadyError,
			PodUID: "uid-web", PodName: "web", PodNamespace: "default", ContainerName: "app", ContainerID: WebAppID, ProbeType: probespec.Readiness},
	}
}
