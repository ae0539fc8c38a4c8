package server_test

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	apiv1 "github.com/probelet/probelet/api/v1alpha1"
	"github.com/probelet/probelet/cri/server/servertest"
	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober"
)

// orphanID has probe state but is unknown to the view (a start or
// removal race).
const orphanID = "d100000000000000000000000000000000000000000000000000000000000041"

// A full ID is looked up without the node-wide join; the answer must be
// the one a unique prefix gets through the join, for every kind of
// container: probed, unprobed, exited, and known to the prober only.
func TestFullIDAndPrefixAgree(t *testing.T) {
	_, endpoint, status, _ := servertest.StartFixture(t)
	status.Set(append(servertest.Statuses(), prober.ContainerStatus{
		PodUID: "uid-gone", PodName: "gone", PodNamespace: "default", ContainerName: "app",
		ContainerID: orphanID, State: node.StateRunning, StartedAt: servertest.Now, Ready: true,
	})...)
	conn := servertest.Dial(t, endpoint)
	rt, api := runtimeapi.NewRuntimeServiceClient(conn), apiv1.NewProbeletClient(conn)
	ctx := context.Background()
	for _, id := range []string{servertest.WebAppID, servertest.WebSidecarID, servertest.DNSCoreID, servertest.JobWorkerID, orphanID} {
		t.Run(id[:2], func(t *testing.T) {
			byID, err := rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
			if err != nil {
				t.Fatal(err)
			}
			byPrefix, err := rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id[:2], Verbose: true})
			if err != nil {
				t.Fatal(err)
			}
			if byID.Status.Id != id || !proto.Equal(byID, byPrefix) {
				t.Errorf("ContainerStatus by ID\n%v\nby prefix\n%v", byID, byPrefix)
			}
			apiByID, err := api.GetContainer(ctx, &apiv1.GetContainerRequest{Container: id})
			if err != nil {
				t.Fatal(err)
			}
			apiByPrefix, err := api.GetContainer(ctx, &apiv1.GetContainerRequest{Container: id[:2]})
			if err != nil {
				t.Fatal(err)
			}
			if apiByID.Container.ContainerId != id || !proto.Equal(apiByID, apiByPrefix) {
				t.Errorf("GetContainer by ID\n%v\nby prefix\n%v", apiByID, apiByPrefix)
			}
		})
	}
}
