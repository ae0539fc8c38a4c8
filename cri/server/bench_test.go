package server_test

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	apiv1 "github.com/probelet/probelet/api/v1alpha1"
	"github.com/probelet/probelet/cri/server/servertest"
	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober"
)

// largeNode copies the fixture's web pod n times: 2n containers, n probed.
func largeNode(n int) ([]node.Pod, []prober.ContainerStatus) {
	base, st := servertest.Pods()[0], servertest.Statuses()[0]
	var pods []node.Pod
	var sts []prober.ContainerStatus
	for i := range n {
		p := base
		p.Name, p.UID, p.SandboxID = fmt.Sprintf("web-%d", i), fmt.Sprintf("uid-%d", i), fmt.Sprintf("%064x", i)
		p.Containers = append([]node.Container(nil), base.Containers...)
		for j := range p.Containers {
			p.Containers[j].ID = fmt.Sprintf("%04x%02d%058d", i, j, 0) // unique 6-character prefixes
		}
		s := st
		s.PodUID, s.PodName, s.ContainerID = p.UID, p.Name, p.Containers[0].ID
		pods, sts = append(pods, p), append(sts, s)
	}
	return pods, sts
}

// Listing a 1000-container node over the socket: what `crictl ps` and
// `probectl ps` cost the daemon.
func BenchmarkList(b *testing.B) {
	pods, sts := largeNode(500)
	_, endpoint := servertest.Start(b, servertest.NewStatus(sts...), servertest.NewView(pods...))
	conn := servertest.Dial(b, endpoint)
	rt, api := runtimeapi.NewRuntimeServiceClient(conn), apiv1.NewProbeletClient(conn)
	ctx := context.Background()
	b.Run("CRI/ListContainers", func(b *testing.B) {
		for b.Loop() {
			if _, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("CRI/ContainerStatusVerbose", func(b *testing.B) {
		for b.Loop() {
			if _, err := rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: sts[250].ContainerID, Verbose: true}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("CRI/ContainerStatusPrefix", func(b *testing.B) {
		for b.Loop() {
			if _, err := rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: sts[250].ContainerID[:6], Verbose: true}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("API/ListContainers", func(b *testing.B) {
		for b.Loop() {
			if _, err := api.ListContainers(ctx, &apiv1.ListContainersRequest{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("API/GetContainer", func(b *testing.B) {
		for b.Loop() {
			if _, err := api.GetContainer(ctx, &apiv1.GetContainerRequest{Container: "web-250/app"}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkListExplained is a node's cost of one probe-state API read of
// 250 pods (the bench's 500 over two nodes): every container's runs and
// explanations, outputs cut to 1 KiB, as the controller asks for them.
func BenchmarkListExplained(b *testing.B) {
	pods, sts := largeNode(250)
	_, endpoint := servertest.Start(b, servertest.NewStatus(sts...), servertest.NewView(pods...))
	api := apiv1.NewProbeletClient(servertest.Dial(b, endpoint))
	ctx := context.Background()
	req := &apiv1.ListExplainedRequest{Namespace: "default", HistoryLimit: 10, OutputLimit: 1024}
	resp, err := api.ListExplained(ctx, req)
	if err != nil || len(resp.Containers) != 500 {
		b.Fatalf("ListExplained: %d containers, %v", len(resp.GetContainers()), err)
	}
	for b.Loop() {
		if _, err := api.ListExplained(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(proto.Size(resp)), "answer-bytes")
}
