//go:build e2e

package e2e_test

import (
	"encoding/json"
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/probelet/probelet/internal/testbed"
	"github.com/probelet/probelet/probespec"
)

const (
	appPort  = 8080
	indexDoc = "/var/www/index.html"
)

// Container commands. The app runs as a child of the container's shell, so
// killing it (killall httpd) leaves the container running and only the
// probes notice.
var (
	// webApp serves /var/www on every address; SIGTERM ends it at once.
	webApp = shell(`trap "exit 0" TERM; httpd -f -p 8080 -h /var/www & wait; echo httpd exited; sleep 3600 & wait`)
	// stubbornWebApp is webApp ignoring SIGTERM: only the grace period's
	// SIGKILL stops it.
	stubbornWebApp = shell(`trap "" TERM; httpd -f -p 8080 -h /var/www & wait; echo httpd exited; sleep 3600 & wait`)
	// loopbackWebApp serves on 127.0.0.1 only: unreachable from the node.
	loopbackWebApp = shell(`trap "exit 0" TERM; httpd -f -p 127.0.0.1:8080 -h /var/www & wait; sleep 3600 & wait`)
	// sleeper just runs.
	sleeper = shell(`trap "exit 0" TERM; sleep 3600 & wait`)
)

func shell(script string) []string { return []string{"sh", "-c", script} }

// app is what runApp started.
type app struct {
	name, pod, ctr, ip string
}

// appSpec is one single-container pod; the container has the pod's name.
type appSpec struct {
	name    string
	cmd     []string
	probes  probespec.ContainerProbes
	rawAnno *string // the annotation verbatim instead of probes
	grace   *int64  // pod terminationGracePeriodSeconds
	// ctrAnnotations are added to the container's (the kubelet's
	// preStopHandler, say).
	ctrAnnotations map[string]string
	// podAnnotations are added to the pod's (probelet.io/probe-origin,
	// say).
	podAnnotations map[string]string
}

// httpPort is the container's one port as the kubelet annotates it.
var httpPort = []corev1.ContainerPort{{Name: "http", ContainerPort: appPort, Protocol: corev1.ProtocolTCP}}

// runApp runs the pod through crictl with the probelet.io/probes
// annotation and the kubelet's container metadata (port "http" = 8080).
func runApp(t *testing.T, bed *testbed.Bed, s appSpec) app {
	t.Helper()
	annotations := map[string]string{probespec.AnnotationProbes: annotation(t, s)}
	maps.Copy(annotations, s.podAnnotations)
	podID, ctrID, err := bed.RunPod(testbed.PodSpec{
		Name:                          s.name,
		Annotations:                   annotations,
		TerminationGracePeriodSeconds: s.grace,
		Container: testbed.ContainerSpec{
			Name:        s.name,
			Command:     s.cmd,
			Ports:       httpPort,
			Annotations: s.ctrAnnotations,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ip, err := bed.PodIP(podID)
	if err != nil {
		t.Fatal(err)
	}
	return app{name: s.name, pod: podID, ctr: ctrID, ip: ip}
}

func annotation(t *testing.T, s appSpec) string {
	t.Helper()
	if s.rawAnno != nil {
		return *s.rawAnno
	}
	data, err := jsonString(probespec.PodProbes{s.name: s.probes})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func jsonString(v any) (string, error) {
	data, err := json.Marshal(v)
	return string(data), err
}

// Probe builders; zero thresholds take Kubernetes' defaults.

func tcpProbe(port int, period, failures int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(int32(port))}},
		PeriodSeconds: period, FailureThreshold: failures,
	}
}

func httpProbe(path string, period, failures int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("http")}},
		PeriodSeconds: period, FailureThreshold: failures,
	}
}

func grpcProbe(port int, period, failures int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: int32(port)}},
		PeriodSeconds: period, FailureThreshold: failures,
	}
}

func execProbe(period, failures int32, cmd ...string) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: cmd}},
		PeriodSeconds: period, FailureThreshold: failures,
	}
}

func ptr[T any](v T) *T { return &v }

// mustExec runs cmd in the container and fails the test unless it exits 0.
func mustExec(t *testing.T, bed *testbed.Bed, ctrID string, cmd ...string) {
	t.Helper()
	out, code, err := bed.Exec(ctrID, cmd...)
	if err != nil || code != 0 {
		t.Fatalf("exec %q in %.12s: exit %d, %v: %s", cmd, ctrID, code, err, out)
	}
}
