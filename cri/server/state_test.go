package server_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	apiv1 "github.com/probelet/probelet/api/v1alpha1"
	"github.com/probelet/probelet/cri/server/servertest"
	"github.com/probelet/probelet/internal/selfsigned"
)

// stateClient serves the fixture's state on a loopback TLS listener with
// a guard that lets only the token "good" through, and dials it pinned.
func stateClient(t *testing.T, pinned bool) apiv1.ProbeletClient {
	t.Helper()
	served, _, _, _ := servertest.StartFixture(t)
	cert, pin, err := selfsigned.New("probelet-state test", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	guard := func(_ context.Context, header string) error {
		switch header {
		case "Bearer good":
			return nil
		case "Bearer tenant":
			return status.Error(codes.PermissionDenied, "forbidden")
		}
		return status.Error(codes.Unauthenticated, "token not accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- served.Server.ServeState(ctx, lis, cert, guard) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeState: %v", err)
		}
	})
	if !pinned {
		_, pin, _ = selfsigned.New("another", time.Now())
	}
	conn, err := grpc.NewClient("passthrough:///"+lis.Addr().String(), grpc.WithTransportCredentials(credentials.NewTLS(selfsigned.Pinned(pin))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return apiv1.NewProbeletClient(conn)
}

func withToken(token string) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	_ = cancel // the test's end cancels nothing else; the deadline bounds the call
	if token == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}

// TestTheStateListenerLetsOnlyTheGuardsCallersRead: every call needs the
// guard's yes; only Version and ListExplained are served over the network,
// no stream and no other read.
func TestTheStateListenerLetsOnlyTheGuardsCallersRead(t *testing.T) {
	c := stateClient(t, true)
	for _, tc := range []struct {
		name  string
		token string
		call  func(context.Context) error
		want  codes.Code
	}{
		{"list with the controller's token", "good", func(ctx context.Context) error {
			_, err := c.ListExplained(ctx, &apiv1.ListExplainedRequest{})
			return err
		}, codes.OK},
		{"version", "good", func(ctx context.Context) error { _, err := c.Version(ctx, &apiv1.VersionRequest{}); return err }, codes.OK},
		{"list without a token", "", func(ctx context.Context) error {
			_, err := c.ListExplained(ctx, &apiv1.ListExplainedRequest{})
			return err
		}, codes.Unauthenticated},
		{"list with a tenant's token", "tenant", func(ctx context.Context) error {
			_, err := c.ListExplained(ctx, &apiv1.ListExplainedRequest{})
			return err
		}, codes.PermissionDenied},
		{"a container by reference", "good", func(ctx context.Context) error {
			_, err := c.GetContainer(ctx, &apiv1.GetContainerRequest{Container: "web/app"})
			return err
		}, codes.Unimplemented},
		{"the event stream", "good", func(ctx context.Context) error {
			s, err := c.Events(ctx, &apiv1.EventsRequest{})
			if err != nil {
				return err
			}
			_, err = s.Recv()
			return err
		}, codes.Unimplemented},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := status.Code(tc.call(withToken(tc.token))); got != tc.want {
				t.Fatalf("code %v, want %v", got, tc.want)
			}
		})
	}
}

// TestAClientPinnedToAnotherCertificateSendsNothing: the token never
// leaves a client whose pin the listener's certificate does not match.
func TestAClientPinnedToAnotherCertificateSendsNothing(t *testing.T) {
	c := stateClient(t, false)
	_, err := c.ListExplained(withToken("good"), &apiv1.ListExplainedRequest{})
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "not the one its node's Lease names") {
		t.Fatalf("a mis-pinned call: %v, want Unavailable naming the pin", err)
	}
}

// TestListExplained: the namespace and pod names narrow the list, each
// container comes with Why's explanations, runs are cut to the history
// limit and outputs to the output limit.
func TestListExplained(t *testing.T) {
	c, _ := apiClient(t)
	for _, tc := range []struct {
		name string
		req  *apiv1.ListExplainedRequest
		want []string
	}{
		{"every namespace", &apiv1.ListExplainedRequest{}, []string{"batch/job/worker", "default/web/app", "default/web/sidecar", "kube-system/dns/coredns"}},
		{"one namespace", &apiv1.ListExplainedRequest{Namespace: "default"}, []string{"default/web/app", "default/web/sidecar"}},
		{"pods by name", &apiv1.ListExplainedRequest{Namespace: "kube-system", PodNames: []string{"dns", "web"}}, []string{"kube-system/dns/coredns"}},
		{"no such namespace", &apiv1.ListExplainedRequest{Namespace: "nowhere"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := c.ListExplained(context.Background(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range resp.Containers {
				got = append(got, w.Container.PodNamespace+"/"+w.Container.PodName+"/"+w.Container.ContainerName)
				if len(w.Explanations) == 0 {
					t.Errorf("%s: no explanations", w.Container.ContainerName)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
	resp, err := c.ListExplained(context.Background(), &apiv1.ListExplainedRequest{Namespace: "default", PodNames: []string{"web"}, HistoryLimit: 1, OutputLimit: 10})
	if err != nil {
		t.Fatal(err)
	}
	wantOutput := fmt.Sprintf("%s... (%d bytes, cut)", servertest.WebReadyError[:10], len(servertest.WebReadyError))
	for _, w := range resp.Containers {
		for _, p := range w.Container.Probes {
			if len(p.History) > 1 {
				t.Errorf("%s %s: %d runs, want at most 1", w.Container.ContainerName, p.Type, len(p.History))
			}
			for _, r := range p.History {
				if r.Output == servertest.WebReadyError {
					t.Errorf("%s %s: output %q not cut", w.Container.ContainerName, p.Type, r.Output)
				}
			}
			if p.LastOutput == servertest.WebReadyError || (len(p.LastOutput) > 10 && p.LastOutput != wantOutput) {
				t.Errorf("%s %s: last output %q, want %q", w.Container.ContainerName, p.Type, p.LastOutput, wantOutput)
			}
		}
		for _, x := range w.Explanations {
			if len(x.LastRuns) > 1 {
				t.Errorf("%s: an explanation with %d runs, want at most 1", w.Container.ContainerName, len(x.LastRuns))
			}
		}
	}
}
