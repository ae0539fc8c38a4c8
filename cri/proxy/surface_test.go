package proxy_test

import (
	"fmt"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestOnlyCRIForwarded: methods of runtime.v1.RuntimeService and
// ImageService reach the runtime, known or not; every other method
// answers Unimplemented and the runtime never sees it.
func TestOnlyCRIForwarded(t *testing.T) {
	rt := startFakeRuntime(t)
	h := startProxy(t, rt)
	for _, tc := range []struct {
		method    string
		forwarded bool
	}{
		{"/runtime.v1.RuntimeService/FutureMethod", true},
		{"/runtime.v1.ImageService/FutureImageMethod", true},
		{"/containerd.services.version.v1.Version/Version", false},
		{"/containerd.services.containers.v1.Containers/List", false},
		{"/containerd.services.tasks.v1.Tasks/Exec", false},
		{"/containerd.services.namespaces.v1.Namespaces/List", false},
		{"/grpc.health.v1.Health/Check", false},
		{"/grpc.reflection.v1.ServerReflection/ServerReflectionInfo", false},
		{"/runtime.v1alpha2.RuntimeService/Version", false},
		{"/runtime.v1.RuntimeServiceX/Version", false},
		{"/runtime.v1.RuntimeService/", false},
		{"/runtime.v1.RuntimeService/a/b", false},
		{"/runtime.v1.RuntimeService/9Version", false},
		{"/x/runtime.v1.RuntimeService/Version", false},
	} {
		t.Run(tc.method, func(t *testing.T) {
			var out wrapperspb.StringValue
			err := h.conn.Invoke(ctxT(t), tc.method, wrapperspb.String("x"), &out)
			n := rt.count(tc.method)
			if tc.forwarded {
				if err != nil || out.GetValue() != tc.method+"(x)" || n != 1 {
					t.Errorf("%s = %q, %v; runtime saw %d calls; want the runtime's answer to 1 call", tc.method, out.GetValue(), err, n)
				}
				return
			}
			if status.Code(err) != codes.Unimplemented {
				t.Errorf("%s = %v, want Unimplemented", tc.method, err)
			}
			if n != 0 {
				t.Errorf("runtime saw %d calls of %s, want none", n, tc.method)
			}
		})
	}
	// Refused without being read: a streaming call is refused the same.
	stream, err := h.conn.NewStream(ctxT(t), &grpc.StreamDesc{ServerStreams: true, ClientStreams: true},
		"/containerd.services.events.v1.Events/Subscribe")
	if err == nil {
		err = stream.RecvMsg(&wrapperspb.StringValue{})
	}
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("streaming containerd call = %v, want Unimplemented", err)
	}
	if n := rt.count("/containerd.services.events.v1.Events/Subscribe"); n != 0 {
		t.Errorf("runtime saw %d streaming containerd calls, want none", n)
	}
}

// TestMethodLabelsBounded: a thousand distinct method names, CRI-shaped
// (forwarded) or not (refused), add one series each way, labelled
// "other"; every method label is a method of this build's CRI or "other".
func TestMethodLabelsBounded(t *testing.T) {
	rt := startFakeRuntime(t)
	h := startProxy(t, rt)
	if _, err := h.cli.Version(ctxT(t), &runtimeapi.VersionRequest{}); err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		method := fmt.Sprintf("/bogus%d.v1.Service/Method%d", i, i)
		if i%2 == 0 {
			method = fmt.Sprintf("/runtime.v1.RuntimeService/Bogus%d", i)
		}
		_ = h.conn.Invoke(ctxT(t), method, wrapperspb.String("x"), &wrapperspb.StringValue{})
	}
	known := map[string]bool{"other": true}
	for _, sd := range []grpc.ServiceDesc{runtimeapi.RuntimeService_ServiceDesc, runtimeapi.ImageService_ServiceDesc} {
		for _, m := range sd.Methods {
			known[m.MethodName] = true
		}
		for _, s := range sd.Streams {
			known[s.StreamName] = true
		}
	}
	mfs, err := h.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "probelet_cri_proxy_calls_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			var key string
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "method" && !known[lp.GetValue()] {
					t.Errorf("method label %q is not a CRI method of this build", lp.GetValue())
				}
				key += lp.GetName() + "=" + lp.GetValue() + " "
			}
			series[key] = m.GetCounter().GetValue()
		}
	}
	want := map[string]float64{
		"method=Version served=runtime ": 1,
		"method=other served=runtime ":   500,
		"method=other served=refused ":   500,
	}
	for k, v := range want {
		if series[k] != v {
			t.Errorf("series {%s} = %v, want %v", k, series[k], v)
		}
	}
	if len(series) > len(want) {
		t.Errorf("%d series after 1000 distinct methods, want %d: %v", len(series), len(want), series)
	}
}
