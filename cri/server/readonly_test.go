package server_test

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/probelet/probelet/cri/server"
	"github.com/probelet/probelet/cri/server/servertest"
)

// served are the CRI methods probelet answers; every other method of the
// two CRI services must be refused as read-only.
var served = map[string]bool{
	"Version": true, "Status": true, "ListPodSandbox": true, "PodSandboxStatus": true,
	"StreamPodSandboxes": true, "ListContainers": true, "StreamContainers": true,
	"ContainerStatus": true, "GetContainerEvents": true,
	"ListImages": true, "ImageStatus": true, "ImageFsInfo": true,
}

func TestUnservedCRIMethodsAreReadOnly(t *testing.T) {
	_, endpoint := servertest.Start(t, servertest.NewStatus(), servertest.NewView())
	conn := servertest.Dial(t, endpoint)
	refused := 0
	for _, desc := range []grpc.ServiceDesc{runtimeapi.RuntimeService_ServiceDesc, runtimeapi.ImageService_ServiceDesc} {
		var names []string
		for _, m := range desc.Methods {
			names = append(names, m.MethodName)
		}
		for _, s := range desc.Streams {
			names = append(names, s.StreamName)
		}
		for _, name := range names {
			if served[name] {
				continue
			}
			refused++
			t.Run(name, func(t *testing.T) {
				err := invoke(conn, "/"+desc.ServiceName+"/"+name)
				want := "probelet is read-only: " + name + " is not supported"
				if st := status.Convert(err); st.Code() != codes.Unimplemented || st.Message() != want {
					t.Fatalf("%s: %v; want Unimplemented %q", name, err, want)
				}
			})
		}
	}
	for _, must := range []string{"RunPodSandbox", "StopContainer", "RemoveContainer", "ExecSync", "PullImage", "RemoveImage"} {
		if served[must] {
			t.Errorf("%s must not be served", must)
		}
	}
	if refused < 20 {
		t.Errorf("only %d methods checked; the CRI service descriptors look wrong", refused)
	}
}

// invoke calls a method with an empty request, unary or streaming.
func invoke(conn *grpc.ClientConn, method string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, method)
	if err != nil {
		return err
	}
	if err := stream.SendMsg(&emptypb.Empty{}); err != nil {
		return err
	}
	if err := stream.CloseSend(); err != nil {
		return err
	}
	err = stream.RecvMsg(&emptypb.Empty{})
	if err == io.EOF {
		return nil
	}
	return err
}

func TestImageService(t *testing.T) {
	_, endpoint, _, _ := servertest.StartFixture(t)
	img := runtimeapi.NewImageServiceClient(servertest.Dial(t, endpoint))
	ctx := context.Background()
	if _, err := img.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{}); err != nil {
		t.Fatalf("ImageFsInfo (crictl's connection check): %v", err)
	}
	list, err := img.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil || len(list.Images) != 4 {
		t.Fatalf("ListImages: %d images, %v; want 4", len(list.GetImages()), err)
	}
	st, err := img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: servertest.CoreDNSImage}})
	if err != nil || st.Image == nil || len(st.Image.RepoDigests) != 1 {
		t.Fatalf("ImageStatus(known digest) = %v, %v", st, err)
	}
	st, err = img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: "nope:1"}})
	if err != nil || st.Image != nil {
		t.Fatalf("ImageStatus(unknown) = %v, %v; want a nil image", st, err)
	}
}

func TestHealth(t *testing.T) {
	srv, endpoint := servertest.Start(t, servertest.NewStatus(), servertest.NewView())
	h := healthpb.NewHealthClient(servertest.Dial(t, endpoint))
	for _, svc := range []string{"", "runtime.v1.RuntimeService", "probelet.v1alpha1.Probelet"} {
		resp, err := h.Check(context.Background(), &healthpb.HealthCheckRequest{Service: svc})
		if err != nil || resp.Status != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("health %q = %v, %v", svc, resp, err)
		}
	}
	srv.Stop()
}

// A peer that is not a gRPC client must not disturb the server: garbage
// gets the connection closed, a peer that stalls mid-handshake is held
// without blocking anyone else.
func TestGarbageOnTheSocket(t *testing.T) {
	_, endpoint := servertest.Start(t, servertest.NewStatus(), servertest.NewView())
	path, _ := server.SocketPath(endpoint)
	for _, garbage := range [][]byte{
		[]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
		make([]byte, 64<<10),
		append([]byte("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"), make([]byte, 64)...), // a TLS ClientHello
	} {
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write(garbage)
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.Copy(io.Discard, c); err != nil && !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("server kept a garbage connection open: %v", err)
		}
		c.Close()
	}
	stalled, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	_, _ = stalled.Write([]byte("PRI * HTTP/2.0\r\n")) // half a preface, then nothing

	rt := runtimeapi.NewRuntimeServiceClient(servertest.Dial(t, endpoint))
	if _, err := rt.Version(context.Background(), &runtimeapi.VersionRequest{}); err != nil {
		t.Fatalf("server broken by garbage: %v", err)
	}
}
