package proxy_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// bytesCodec sends a fuzzed frame as it is: the proxy sees exactly the
// bytes the fuzzer made.
type bytesCodec struct{}

func (bytesCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(*v.(*[]byte))}, nil
}

func (bytesCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*v.(*[]byte) = data.Materialize()
	return nil
}

func (bytesCodec) Name() string { return "proto" }

var _ encoding.CodecV2 = bytesCodec{}

// fuzzMethods are what a caller may name: every unary CRI method the
// kubelet calls (the relist reads the memo answers among them), methods
// of those services this build does not know, and other services'
// methods, which the proxy must refuse. Streams are left out: a unary
// call on one waits for its end.
var fuzzMethods = func() []string {
	var m []string
	for _, sd := range []grpc.ServiceDesc{runtimeapi.RuntimeService_ServiceDesc, runtimeapi.ImageService_ServiceDesc} {
		for _, md := range sd.Methods {
			m = append(m, "/"+sd.ServiceName+"/"+md.MethodName)
		}
	}
	return append(m, "/runtime.v1.RuntimeService/NotYetInvented", "/containerd.services.version.v1.Version/Version",
		"/grpc.health.v1.Health/Check", "/runtime.v1.RuntimeService/", "/x")
}()

// FuzzProxyFrames sends arbitrary bytes as the request of any method
// through the proxy, over a runtime that holds a pod: every call ends
// with an answer or a status (a method of another service: Unimplemented),
// the proxy neither panics nor hangs, and afterwards it still serves the
// kubelet's relist reads.
func FuzzProxyFrames(f *testing.F) {
	rt := startFakeRuntime(f)
	rt.addPod("sb1", "c1", running)
	h := startProxy(f, rt)
	h.waitLive(f)
	f.Add(uint8(0), []byte{})
	f.Add(uint8(3), []byte{0x0a, 0x02, 'c', '1'})
	f.Add(uint8(7), []byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add(uint8(255), []byte("not protobuf"))
	f.Fuzz(func(t *testing.T, pick uint8, req []byte) {
		method := fuzzMethods[int(pick)%len(fuzzMethods)]
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var resp []byte
		err := h.conn.Invoke(ctx, method, &req, &resp, grpc.ForceCodecV2(bytesCodec{}))
		if ctx.Err() != nil {
			t.Fatalf("%s with %q: no answer in 10 s", method, req)
		}
		if !forwarded(method) && status.Code(err) != codes.Unimplemented {
			t.Fatalf("%s (another service) answered %v, want Unimplemented", method, err)
		}
		if _, err := h.cli.ListContainers(ctx, &runtimeapi.ListContainersRequest{}); err != nil {
			t.Fatalf("after %s with %q the proxy no longer serves ListContainers: %v", method, req, err)
		}
	})
}

// forwarded reports whether method is of a service the proxy forwards.
func forwarded(method string) bool {
	return strings.HasPrefix(method, "/runtime.v1.RuntimeService/") && method != "/runtime.v1.RuntimeService/" ||
		strings.HasPrefix(method, "/runtime.v1.ImageService/")
}
