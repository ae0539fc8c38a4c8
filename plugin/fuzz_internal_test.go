package plugin

import (
	"context"
	"testing"
	"time"

	"github.com/containerd/nri/pkg/api"
	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/probelet/probelet/lifecycle"
	"github.com/probelet/probelet/prober"
)

// FuzzNRIEvents feeds the plugin's handlers whatever an NRI runtime could
// send — odd IDs and names, any probes annotation, any ports annotation,
// any environment — through the real node cache into the real engine. No
// handler may fail the runtime's operation or panic, and the engine must
// list what it was given without tripping over it.
func FuzzNRIEvents(f *testing.F) {
	f.Add("sb1", "uid-1", "web", "default", "c1", "web", `{"web": {"livenessProbe": {"tcpSocket": {"port": "http"}}}}`,
		`[{"name":"http","containerPort":8080,"protocol":"TCP"}]`, "PORT=8080", uint8(0))
	f.Add("", "", "", "", "", "", `{`, `[{`, "=", uint8(1))
	f.Add("x", "x", "../..", "ns", "x", "x", `{"x": {"readinessProbe": {"exec": {"command": ["$(A)$(", "$$"]}}}}`, `null`, "A", uint8(2))
	f.Add("s", "u", "p", "n", "c", "c", `{"c": {"startupProbe": {"grpc": {"port": 99999}}, "livenessProbe": {"httpGet": {"port": 0}}}}`,
		`[{"name":"","containerPort":-1}]`, "\x00=\xff", uint8(3))
	f.Fuzz(func(t *testing.T, sbID, uid, name, ns, ctrID, ctrName, probes, ports, env string, step uint8) {
		clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		engine, err := prober.NewManager(prober.WithClock(clk))
		if err != nil {
			t.Fatal(err)
		}
		cache, err := lifecycle.New(engine, lifecycle.WithClock(clk))
		if err != nil {
			t.Fatal(err)
		}
		p, err := New(cache, WithClock(clk), WithLogger(zap.NewNop()))
		if err != nil {
			t.Fatal(err)
		}
		h := handler{p}
		ctx := context.Background()
		pod := &api.PodSandbox{Id: sbID, Uid: uid, Name: name, Namespace: ns, Ips: []string{"10.0.0.1"},
			Annotations: map[string]string{"probelet.io/probes": probes}}
		ctr := &api.Container{Id: ctrID, PodSandboxId: sbID, Name: ctrName, Pid: uint32(step),
			State:       api.ContainerState(step % 5),
			Env:         []string{env},
			Annotations: map[string]string{"io.kubernetes.container.ports": ports}}
		for i, op := range []func() error{
			func() error { return h.RunPodSandbox(ctx, pod) },
			func() error { return h.PostCreateContainer(ctx, pod, ctr) },
			func() error { return h.StartContainer(ctx, pod, ctr) },
			func() error { return h.PostStartContainer(ctx, pod, ctr) },
			func() error {
				_, err := h.Synchronize(ctx, []*api.PodSandbox{pod, nil}, []*api.Container{ctr, nil})
				return err
			},
			func() error { _, err := h.StopContainer(ctx, pod, ctr); return err },
			func() error { return h.RemoveContainer(ctx, nil, ctr) },
			func() error { return h.StopPodSandbox(ctx, pod) },
			func() error { return h.RemovePodSandbox(ctx, pod) },
		} {
			if i == int(step)%9 {
				_ = h.PostStartContainer(ctx, nil, nil) // nil inputs mid-sequence
			}
			if err := op(); err != nil {
				t.Fatalf("handler %d failed the runtime's operation: %v", i, err)
			}
			_ = engine.Containers()
		}
		if n := promtestutil.ToFloat64(p.m.panics); n != 0 {
			t.Fatalf("a handler panicked (%v recovered)", n)
		}
	})
}
