package prober_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/probe/execprobe"
	"github.com/probelet/probelet/prober/results"
	"github.com/probelet/probelet/probespec"
)

// fakeRunner is an ExecSync that exits with code and records commands.
type fakeRunner struct {
	mu   sync.Mutex
	cmds []string
	code int32
}

func (r *fakeRunner) ExecSync(_ context.Context, id string, cmd []string, _ time.Duration) ([]byte, []byte, int32, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cmds = append(r.cmds, id+": "+strings.Join(cmd, " "))
	return []byte("out"), nil, r.code, nil
}

var _ execprobe.Runner = (*fakeRunner)(nil)

// TestDefaultHandlersProbeRealTargets runs the real HTTP and TCP handlers
// against loopback servers, and exec through a runner.
func TestDefaultHandlersProbeRealTargets(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	_, portStr, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portStr)
	runner := &fakeRunner{code: 1}

	clock := clocktesting.NewFakeClock(epoch)
	m, err := prober.NewManager(prober.WithClock(clock), prober.WithRegisterer(prometheus.NewRegistry()),
		prober.WithExecRunner(runner), prober.WithAgentStartTime(epoch.Add(-time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	defer run(t, m)()
	pod := testPod("c1", probespec.ContainerProbes{
		Readiness: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("web")}},
			TimeoutSeconds: 5, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 1},
		Liveness: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(int32(port))}},
			TimeoutSeconds: 5, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3},
		Startup: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-f", "$(MARKER)"}}},
			TimeoutSeconds: 5, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 1},
	})
	pod.IPs = []string{"127.0.0.1"}
	pod.API = &node.APIPod{Spec: &corev1.PodSpec{Containers: []corev1.Container{{Name: "app",
		Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: int32(port)}},
		Env:   []corev1.EnvVar{{Name: "MARKER", Value: "/tmp/started"}}}}}}
	pod.Containers[0].Annotations = map[string]string{probespec.AnnotationContainerPorts: `[{"name":"web","containerPort":` + portStr + `}]`}
	m.UpdatePod(pod)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := m.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	st, _ := m.Container("c1")
	if got := st.Probes[probespec.Startup]; got.Result != results.Failure || got.Method != probe.MethodExec || got.LastOutput != "out" {
		t.Fatalf("startup (exec exit 1) = %+v", got)
	}
	if len(runner.cmds) != 1 || runner.cmds[0] != "c1: test -f /tmp/started" {
		t.Fatalf("exec commands = %q", runner.cmds)
	}

	runner.mu.Lock()
	runner.code = 0
	runner.mu.Unlock()
	m.UpdatePod(withContainerID(pod, "c2", epoch)) // a restarted container passes startup
	if err := m.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	st, _ = m.Container("c2")
	if got := st.Probes[probespec.Readiness]; got.Result != results.Success || got.Method != probe.MethodHTTP {
		t.Fatalf("readiness (HTTP 200 on the named port) = %+v", got)
	}
	clock.Step(10 * time.Second)
	if err := m.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	st, _ = m.Container("c2")
	if got := st.Probes[probespec.Liveness]; got.Result != results.Success || got.Method != probe.MethodDial || got.LastProbeTime.IsZero() {
		t.Fatalf("liveness (TCP dial) = %+v", got)
	}
}
