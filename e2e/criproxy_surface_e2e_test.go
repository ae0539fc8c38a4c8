//go:build e2e

package e2e_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/probelet/probelet/internal/testbed"
)

// TestCRIProxyOnlyCRI: containerd's own API, which containerd serves on
// the socket the proxy forwards to, answers Unimplemented through the
// proxy (a raw gRPC call, as grpcurl makes it) while the same call on
// containerd's socket works; CRI through the proxy still works, crictl's
// answers byte for byte containerd's; the refusals count under one
// label.
func TestCRIProxyOnlyCRI(t *testing.T) {
	t.Parallel() // functional, no timing bound of its own: beside the others
	bed := testbed.Start(t)
	proxy := proxyEndpoint(bed)
	d := startCRIProxy(t, bed)
	if _, _, err := bed.RunPod(testbed.PodSpec{Name: "surface",
		Container: testbed.ContainerSpec{Name: "c", Command: shell("exec sleep 3600")}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "crictl version through the proxy", func() (bool, string) {
		out, err := crictlAt(bed, proxy, "version")
		if err != nil {
			return false, err.Error()
		}
		return true, string(out)
	})

	direct, viaProxy := rawConn(t, bed.CRIEndpoint()), rawConn(t, proxy)
	// These take an empty request; their answers are read as Empty
	// (their fields kept as unknown ones).
	for _, method := range []string{
		"/containerd.services.version.v1.Version/Version",
		"/containerd.services.namespaces.v1.Namespaces/List",
		"/containerd.services.introspection.v1.Introspection/Server",
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var out emptypb.Empty
		if err := direct.Invoke(ctx, method, &emptypb.Empty{}, &out); err != nil {
			t.Errorf("%s on containerd's socket: %v, want an answer (the test's premise)", method, err)
		}
		err := viaProxy.Invoke(ctx, method, &emptypb.Empty{}, &out)
		cancel()
		if status.Code(err) != codes.Unimplemented {
			t.Errorf("%s through the proxy: %v, want Unimplemented", method, err)
		} else {
			t.Logf("%s through the proxy: %v", method, err)
		}
	}
	if n, _ := d.sample("probelet_cri_proxy_calls_total", map[string]string{"method": "other", "served": "refused"}); n != 3 {
		t.Errorf("refused calls counted %v, want 3 under method=other", n)
	}

	checkCrictlIdentical(t, bed, proxy)
	if _, err := crictlAt(bed, proxy, "imagefsinfo"); err != nil {
		t.Errorf("ImageService through the proxy: %v", err)
	}
}

// rawConn is a gRPC connection to endpoint for calls by method name.
func rawConn(t *testing.T, endpoint string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}
