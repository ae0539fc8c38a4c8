package server_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/probelet/probelet/cri/server/servertest"
	"github.com/probelet/probelet/node"
)

func runtimeClient(t *testing.T) (runtimeapi.RuntimeServiceClient, *servertest.View) {
	t.Helper()
	_, endpoint, _, view := servertest.StartFixture(t)
	return runtimeapi.NewRuntimeServiceClient(servertest.Dial(t, endpoint)), view
}

func TestVersion(t *testing.T) {
	rt, _ := runtimeClient(t)
	v, err := rt.Version(context.Background(), &runtimeapi.VersionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if v.RuntimeName != "probelet" || v.RuntimeApiVersion != "v1" || v.RuntimeVersion != "v0.0.0-test" {
		t.Fatalf("Version = %v", v)
	}
}

func TestStatusConditions(t *testing.T) {
	rt, view := runtimeClient(t)
	for _, connected := range []bool{true, false} {
		view.SetNRIConnected(connected)
		resp, err := rt.Status(context.Background(), &runtimeapi.StatusRequest{Verbose: true})
		if err != nil {
			t.Fatal(err)
		}
		conds := map[string]bool{}
		for _, c := range resp.Status.Conditions {
			conds[c.Type] = c.Status
		}
		want := map[string]bool{"RuntimeReady": true, "NetworkReady": true, "NRIConnected": connected}
		if !mapsEqual(conds, want) {
			t.Errorf("connected=%v: conditions %v, want %v", connected, conds, want)
		}
		var info map[string]any
		if err := json.Unmarshal([]byte(resp.Info["probelet"]), &info); err != nil {
			t.Fatalf("verbose info: %v", err)
		}
		if info["nriConnected"] != connected || info["containers"] != 4.0 || info["probedContainers"] != 3.0 || info["pods"] != 3.0 {
			t.Errorf("verbose info %v", info)
		}
	}
}

func mapsEqual[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestListPodSandboxFilters(t *testing.T) {
	rt, _ := runtimeClient(t)
	ready := &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}
	notReady := &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY}
	tests := []struct {
		name   string
		filter *runtimeapi.PodSandboxFilter
		want   []string
	}{
		{"all", nil, []string{"job", "web", "dns"}},
		{"full id", &runtimeapi.PodSandboxFilter{Id: servertest.DNSSandboxID}, []string{"dns"}},
		{"id prefix", &runtimeapi.PodSandboxFilter{Id: "5a"}, []string{"web"}},
		{"shared prefix", &runtimeapi.PodSandboxFilter{Id: "5"}, []string{"job", "web", "dns"}},
		{"unknown id", &runtimeapi.PodSandboxFilter{Id: "ff"}, nil},
		{"ready", &runtimeapi.PodSandboxFilter{State: ready}, []string{"web", "dns"}},
		{"terminating", &runtimeapi.PodSandboxFilter{State: notReady}, []string{"job"}},
		{"label", &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"app": "web"}}, []string{"web"}},
		{"label mismatch", &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"app": "dns"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := rt.ListPodSandbox(context.Background(), &runtimeapi.ListPodSandboxRequest{Filter: tt.filter})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range resp.Items {
				got = append(got, p.Metadata.Name)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("pods %v, want %v", got, tt.want)
			}
		})
	}
}

func TestListContainersFilters(t *testing.T) {
	rt, _ := runtimeClient(t)
	state := func(s runtimeapi.ContainerState) *runtimeapi.ContainerStateValue {
		return &runtimeapi.ContainerStateValue{State: s}
	}
	tests := []struct {
		name   string
		filter *runtimeapi.ContainerFilter
		want   []string
	}{
		{"all", nil, []string{"worker", "app", "sidecar", "coredns"}},
		{"id prefix", &runtimeapi.ContainerFilter{Id: "b1"}, []string{"coredns"}},
		{"shared prefix", &runtimeapi.ContainerFilter{Id: "a"}, []string{"app", "sidecar"}},
		{"full id", &runtimeapi.ContainerFilter{Id: servertest.WebAppID}, []string{"app"}},
		{"pod", &runtimeapi.ContainerFilter{PodSandboxId: servertest.WebSandboxID}, []string{"app", "sidecar"}},
		{"pod prefix", &runtimeapi.ContainerFilter{PodSandboxId: "5b"}, []string{"coredns"}},
		{"running", &runtimeapi.ContainerFilter{State: state(runtimeapi.ContainerState_CONTAINER_RUNNING)}, []string{"app", "sidecar", "coredns"}},
		{"exited", &runtimeapi.ContainerFilter{State: state(runtimeapi.ContainerState_CONTAINER_EXITED)}, []string{"worker"}},
		{"created", &runtimeapi.ContainerFilter{State: state(runtimeapi.ContainerState_CONTAINER_CREATED)}, nil},
		{"own label", &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"io.kubernetes.container.name": "app"}}, []string{"app"}},
		{"filled-in label", &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"io.kubernetes.pod.namespace": "kube-system"}}, []string{"coredns"}},
		{"pod and state", &runtimeapi.ContainerFilter{PodSandboxId: "5c", State: state(runtimeapi.ContainerState_CONTAINER_RUNNING)}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := rt.ListContainers(context.Background(), &runtimeapi.ListContainersRequest{Filter: tt.filter})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range resp.Containers {
				got = append(got, c.Metadata.Name)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("containers %v, want %v", got, tt.want)
			}
		})
	}
}

func TestStreamContainersAndSandboxes(t *testing.T) {
	rt, _ := runtimeClient(t)
	cs, err := rt.StreamContainers(context.Background(), &runtimeapi.StreamContainersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		resp, err := cs.Recv()
		if err != nil {
			break
		}
		n += len(resp.Containers)
	}
	ps, err := rt.StreamPodSandboxes(context.Background(), &runtimeapi.StreamPodSandboxesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	p := 0
	for {
		resp, err := ps.Recv()
		if err != nil {
			break
		}
		p += len(resp.PodSandboxes)
	}
	if n != 4 || p != 3 {
		t.Fatalf("streamed %d containers and %d pods, want 4 and 3", n, p)
	}
}

// normalized renders a response as stable, indented JSON with verbose
// info values decoded, for golden files.
func normalized(t *testing.T, status proto.Message, info map[string]string) []byte {
	t.Helper()
	b, err := protojson.Marshal(status)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Status json.RawMessage            `json:"status"`
		Info   map[string]json.RawMessage `json:"info"`
	}
	doc.Status = b
	doc.Info = map[string]json.RawMessage{}
	for k, v := range info {
		doc.Info[k] = json.RawMessage(v)
	}
	var generic any
	raw, _ := json.Marshal(doc)
	if err := json.Unmarshal(raw, &generic); err != nil {
		t.Fatal(err)
	}
	out, _ := json.MarshalIndent(generic, "", "  ")
	return append(out, '\n')
}

func TestContainerStatusVerbose(t *testing.T) {
	rt, _ := runtimeClient(t)
	for _, tt := range []struct{ id, golden string }{
		{"a1", "container_status_web_app.json"},                    // prefix, probes, history
		{servertest.WebSidecarID, "container_status_sidecar.json"}, // no probes
		{"b1", "container_status_coredns.json"},                    // restart issued
		{"c1", "container_status_job_worker.json"},                 // exited, spec rejected
	} {
		t.Run(tt.golden, func(t *testing.T) {
			resp, err := rt.ContainerStatus(context.Background(), &runtimeapi.ContainerStatusRequest{ContainerId: tt.id, Verbose: true})
			if err != nil {
				t.Fatal(err)
			}
			servertest.Golden(t, tt.golden, normalized(t, resp.Status, resp.Info))
		})
	}
}

func TestPodSandboxStatusVerbose(t *testing.T) {
	rt, _ := runtimeClient(t)
	resp, err := rt.PodSandboxStatus(context.Background(), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: "5a", Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	servertest.Golden(t, "pod_sandbox_status_web.json", normalized(t, resp.Status, resp.Info))
	if len(resp.ContainersStatuses) != 2 {
		t.Errorf("%d container statuses, want 2", len(resp.ContainersStatuses))
	}
}

func TestStatusCallsBadIDs(t *testing.T) {
	rt, _ := runtimeClient(t)
	tests := []struct {
		name string
		call func() error
		code codes.Code
	}{
		{"unknown container", func() error {
			_, err := rt.ContainerStatus(context.Background(), &runtimeapi.ContainerStatusRequest{ContainerId: "ffff"})
			return err
		}, codes.NotFound},
		{"ambiguous container", func() error {
			_, err := rt.ContainerStatus(context.Background(), &runtimeapi.ContainerStatusRequest{ContainerId: "a"})
			return err
		}, codes.InvalidArgument},
		{"empty container", func() error {
			_, err := rt.ContainerStatus(context.Background(), &runtimeapi.ContainerStatusRequest{})
			return err
		}, codes.InvalidArgument},
		{"unknown pod", func() error {
			_, err := rt.PodSandboxStatus(context.Background(), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: "ffff"})
			return err
		}, codes.NotFound},
		{"ambiguous pod", func() error {
			_, err := rt.PodSandboxStatus(context.Background(), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: "5"})
			return err
		}, codes.InvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); status.Code(err) != tt.code {
				t.Fatalf("error %v, want code %v", err, tt.code)
			}
		})
	}
}

// An exact ID wins over longer IDs it prefixes, wherever they sort: here
// two such IDs belong to pods that list before the exact one's.
func TestStatusCallsExactIDWins(t *testing.T) {
	pods := []node.Pod{
		{Name: "a", Namespace: "default", SandboxID: "s1x", Containers: []node.Container{{ID: "c1x", Name: "app"}}},
		{Name: "b", Namespace: "default", SandboxID: "s1y", Containers: []node.Container{{ID: "c1y", Name: "app"}}},
		{Name: "c", Namespace: "default", SandboxID: "s1", Containers: []node.Container{{ID: "c1", Name: "app"}}},
	}
	_, endpoint := servertest.Start(t, servertest.NewStatus(), servertest.NewView(pods...))
	rt := runtimeapi.NewRuntimeServiceClient(servertest.Dial(t, endpoint))
	ctx := context.Background()
	c, err := rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: "c1"})
	if err != nil || c.Status.Id != "c1" {
		t.Errorf("ContainerStatus(c1) = %v, %v; want c1", c.GetStatus().GetId(), err)
	}
	p, err := rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: "s1"})
	if err != nil || p.Status.Id != "s1" {
		t.Errorf("PodSandboxStatus(s1) = %v, %v; want s1", p.GetStatus().GetId(), err)
	}
}
