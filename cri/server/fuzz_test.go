package server_test

import (
	"context"
	"testing"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	apiv1 "github.com/probelet/probelet/api/v1alpha1"
	"github.com/probelet/probelet/cri/server/servertest"
)

// FuzzSocketRequests sends the socket what a client could: any container or
// sandbox ID or prefix, any filter, any label selector. Every answer is a
// result or a clear gRPC status; the server never panics and keeps serving.
func FuzzSocketRequests(f *testing.F) {
	f.Add("a1", "5a", "io.kubernetes.pod.name", "web", "default/web/app", int32(1))
	f.Add("", "", "", "", "", int32(-1))
	f.Add("a", "5", "\x00", "\xff", "//", int32(99))
	f.Add(servertest.WebAppID+"x", servertest.WebSandboxID, "app", "=", "kube-system/dns", int32(2))
	// One server for every input, stopped when the fuzz run ends.
	_, endpoint, _, _ := servertest.StartFixture(f)
	conn := servertest.Dial(f, endpoint)
	fuzzRuntime, fuzzProbelet := runtimeapi.NewRuntimeServiceClient(conn), apiv1.NewProbeletClient(conn)
	f.Fuzz(func(t *testing.T, ctrID, podID, labelKey, labelValue, ref string, state int32) {
		for _, s := range []string{ctrID, podID, labelKey, labelValue, ref} {
			if !utf8.ValidString(s) {
				return // protobuf strings are UTF-8: the client cannot even send it
			}
		}
		ctx := context.Background()
		labels := map[string]string{labelKey: labelValue}
		calls := []func() error{
			func() error {
				_, err := fuzzRuntime.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: ctrID, Verbose: state%2 == 0})
				return err
			},
			func() error {
				_, err := fuzzRuntime.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: podID, Verbose: true})
				return err
			},
			func() error {
				_, err := fuzzRuntime.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
					Id: ctrID, PodSandboxId: podID, LabelSelector: labels,
					State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState(state)}}})
				return err
			},
			func() error {
				_, err := fuzzRuntime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
					Id: podID, LabelSelector: labels, State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState(state)}}})
				return err
			},
			func() error {
				_, err := fuzzProbelet.GetContainer(ctx, &apiv1.GetContainerRequest{Container: ref})
				return err
			},
			func() error {
				_, err := fuzzProbelet.Why(ctx, &apiv1.WhyRequest{Container: ref})
				return err
			},
			func() error {
				_, err := fuzzProbelet.ListContainers(ctx, &apiv1.ListContainersRequest{})
				return err
			},
		}
		for i, call := range calls {
			err := call()
			if err == nil {
				continue
			}
			s, ok := status.FromError(err)
			switch {
			case !ok, s.Code() == codes.Unknown, s.Code() == codes.Internal, s.Code() == codes.Unavailable, s.Code() == codes.Canceled:
				t.Fatalf("call %d: %v, want a result or a clear status", i, err)
			case s.Message() == "":
				t.Fatalf("call %d: %s without a message", i, s.Code())
			}
		}
	})
}
