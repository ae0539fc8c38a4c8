package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	apiv1 "github.com/probelet/probelet/api/v1alpha1"
	"github.com/probelet/probelet/cri/server/servertest"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/results"
	"github.com/probelet/probelet/probespec"
)

func apiClient(t *testing.T) (apiv1.ProbeletClient, *servertest.Status) {
	t.Helper()
	_, endpoint, src, _ := servertest.StartFixture(t)
	return apiv1.NewProbeletClient(servertest.Dial(t, endpoint)), src
}

func TestAPIVersion(t *testing.T) {
	c, _ := apiClient(t)
	v, err := c.Version(context.Background(), &apiv1.VersionRequest{})
	if err != nil || v.Version != "v0.0.0-test" || v.ApiVersion != "v1alpha1" || !v.NriConnected {
		t.Fatalf("Version = %v, %v", v, err)
	}
}

func TestAPIListContainers(t *testing.T) {
	c, _ := apiClient(t)
	tests := []struct {
		ref  string
		want []string
	}{
		{"", []string{"batch/job/worker", "default/web/app", "default/web/sidecar", "kube-system/dns/coredns"}},
		{"a", []string{"default/web/app", "default/web/sidecar"}},
		{"web", []string{"default/web/app", "default/web/sidecar"}}, // a pod name
		{"default/web", []string{"default/web/app", "default/web/sidecar"}},
		{"web/app", []string{"default/web/app"}},
		{"kube-system/dns/coredns", []string{"kube-system/dns/coredns"}},
		{"default/dns/coredns", nil},
		{"ffff", nil},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			resp, err := c.ListContainers(context.Background(), &apiv1.ListContainersRequest{Container: tt.ref})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ctr := range resp.Containers {
				got = append(got, ctr.PodNamespace+"/"+ctr.PodName+"/"+ctr.ContainerName)
				for _, p := range ctr.Probes {
					if len(p.History) != 0 {
						t.Errorf("%s: ListContainers carries history", ctr.ContainerName)
					}
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAPIGetContainer(t *testing.T) {
	c, _ := apiClient(t)
	resp, err := c.GetContainer(context.Background(), &apiv1.GetContainerRequest{Container: "web/app", HistoryLimit: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctr := resp.Container
	if ctr.ContainerId != servertest.WebAppID || !ctr.Started || ctr.Ready || len(ctr.Probes) != 3 {
		t.Fatalf("container %v", ctr)
	}
	ready := ctr.Probes[1]
	if ready.Type != apiv1.ProbeType_PROBE_TYPE_READINESS || ready.Result != apiv1.Result_RESULT_FAILURE ||
		ready.Consecutive != 3 || ready.Method != apiv1.Method_METHOD_HTTP || len(ready.History) != 2 ||
		ready.Spec.Handler != "http-get http://:http/ready" || ready.Spec.FailureThreshold != 3 {
		t.Errorf("readiness %v", ready)
	}
	if len(resp.Events) != 1 || resp.Events[0].Reason != "Unhealthy" {
		t.Errorf("events %v, want the readiness Unhealthy event", resp.Events)
	}
	// Events of an earlier instance (another container ID) belong to the
	// container by pod and name.
	dns, err := c.GetContainer(context.Background(), &apiv1.GetContainerRequest{Container: "b1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(dns.Events) != 2 || dns.Events[1].Reason != "Killing" || len(dns.Container.Restarts) != 1 {
		t.Errorf("coredns events %v restarts %v", dns.Events, dns.Container.Restarts)
	}
	byPod, err := c.GetContainer(context.Background(), &apiv1.GetContainerRequest{Container: "dns"}) // its only container
	if err != nil || byPod.Container.ContainerId != servertest.DNSCoreID {
		t.Errorf("GetContainer(dns) = %v, %v", byPod.GetContainer().GetContainerId(), err)
	}
	if got := dns.Container.Probes[0].Spec.GetTerminationGracePeriodSeconds(); got != 5 {
		t.Errorf("liveness terminationGracePeriodSeconds %d, want 5", got)
	}
}

func TestAPIBadReferences(t *testing.T) {
	c, _ := apiClient(t)
	tests := []struct {
		ref  string
		code codes.Code
		msg  string
	}{
		{"", codes.InvalidArgument, "is required"},
		{"ffff", codes.NotFound, `container "ffff" not found`},
		{"web/nope", codes.NotFound, `container "web/nope" not found`},
		{"default/web", codes.InvalidArgument, "ambiguous"},
		{"a", codes.InvalidArgument, "ambiguous, it matches: a100000000000 (default/web/app), a200000000000 (default/web/sidecar)"},
		{"web/", codes.InvalidArgument, "empty part"},
		{"a/b/c/d", codes.InvalidArgument, "too many parts"},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			_, err := c.GetContainer(context.Background(), &apiv1.GetContainerRequest{Container: tt.ref})
			st := status.Convert(err)
			if st.Code() != tt.code || !strings.Contains(st.Message(), tt.msg) {
				t.Errorf("GetContainer(%q): %v; want %v containing %q", tt.ref, err, tt.code, tt.msg)
			}
			_, err = c.Why(context.Background(), &apiv1.WhyRequest{Container: tt.ref})
			if status.Code(err) != tt.code {
				t.Errorf("Why(%q): %v; want %v", tt.ref, err, tt.code)
			}
		})
	}
}

func TestAPIWhy(t *testing.T) {
	c, _ := apiClient(t)
	var out strings.Builder
	for _, ref := range []string{"web/app", "web/sidecar", "dns/coredns", "job/worker"} {
		resp, err := c.Why(context.Background(), &apiv1.WhyRequest{Container: ref})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&out, "%s:\n", ref)
		for _, x := range resp.Explanations {
			fmt.Fprintf(&out, "  [%s] %s (probe %s, %d/%d, %d runs, %d restarts)\n",
				x.Subject, x.Text, x.ProbeType, x.Consecutive, x.Threshold, len(x.LastRuns), len(x.Restarts))
		}
	}
	servertest.Golden(t, "why.txt", []byte(out.String()))
}

func recvAll[T any](t *testing.T, recv func() (T, error)) []T {
	t.Helper()
	var out []T
	for {
		m, err := recv()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
}

func TestAPIEvents(t *testing.T) {
	c, src := apiClient(t)
	stream, err := c.Events(context.Background(), &apiv1.EventsRequest{Container: "dns/coredns"})
	if err != nil {
		t.Fatal(err)
	}
	if evs := recvAll(t, stream.Recv); len(evs) != 2 {
		t.Fatalf("%d retained coredns events, want 2", len(evs))
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	follow, err := c.Events(ctx, &apiv1.EventsRequest{Container: "web/app", Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	first, err := follow.Recv() // the retained one
	if err != nil || first.Reason != "Unhealthy" {
		t.Fatalf("first followed event %v, %v", first, err)
	}
	src.PublishEvent(prober.Event{Reason: "Other", PodName: "dns", PodNamespace: "kube-system", ContainerName: "coredns"})
	src.PublishEvent(prober.Event{Reason: "ProbeWarning", Type: "Warning", PodName: "web", PodNamespace: "default",
		ContainerName: "app", ContainerID: servertest.WebAppID, ProbeType: probespec.Readiness})
	next, err := follow.Recv()
	if err != nil || next.Reason != "ProbeWarning" || next.ProbeType != apiv1.ProbeType_PROBE_TYPE_READINESS {
		t.Fatalf("followed event %v, %v; want the new web/app ProbeWarning", next, err)
	}
}

func TestAPIWatchResultsFilter(t *testing.T) {
	c, src := apiClient(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := c.WatchResults(ctx, &apiv1.WatchResultsRequest{Container: "default/web/app"})
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitFor(t, "the watch subscription", func() bool { n, _, _ := src.ResultStats(); return n == 1 })
	src.PublishResult(prober.ResultChange{PodName: "dns", PodNamespace: "kube-system", ContainerName: "coredns", Result: results.Failure})
	src.PublishResult(prober.ResultChange{PodName: "web", PodNamespace: "default", ContainerName: "app",
		ContainerID: servertest.WebAppID, Type: probespec.Readiness, Result: results.Success, Output: "ok", Time: servertest.Now})
	rc, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if rc.ContainerName != "app" || rc.Result != apiv1.Result_RESULT_SUCCESS || rc.ProbeType != apiv1.ProbeType_PROBE_TYPE_READINESS ||
		rc.Output != "ok" || !rc.Time.AsTime().Equal(servertest.Now) {
		t.Fatalf("change %v; want web/app readiness Success", rc)
	}
	if _, err := c.WatchResults(ctx, &apiv1.WatchResultsRequest{Container: "x//y"}); err == nil {
		bad, _ := c.WatchResults(ctx, &apiv1.WatchResultsRequest{Container: "x//y"})
		if _, err := bad.Recv(); status.Code(err) != codes.InvalidArgument {
			t.Fatalf("bad watch filter: %v; want InvalidArgument", err)
		}
	}
}
