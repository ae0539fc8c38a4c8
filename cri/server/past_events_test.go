package server_test

import (
	"context"
	"errors"
	"io"
	"testing"

	apiv1 "github.com/probelet/probelet/api/v1alpha1"
	"github.com/probelet/probelet/cri/server"
	"github.com/probelet/probelet/cri/server/servertest"
	"github.com/probelet/probelet/prober"
)

// Events from before a restart (probelet's history file) are served first,
// within the log's bound.
func TestPastEventsAreServedFirst(t *testing.T) {
	src := servertest.NewStatus()
	_, endpoint := servertest.Start(t, src, servertest.NewView(),
		server.WithEventHistory(3), server.WithPastEvents([]prober.Event{{Reason: "a"}, {Reason: "b"}}))
	servertest.WaitFor(t, "the event log subscription", func() bool { n, _, _ := src.EventStats(); return n == 1 })
	src.PublishEvent(prober.Event{Reason: "c"})
	src.PublishEvent(prober.Event{Reason: "d"})
	client := apiv1.NewProbeletClient(servertest.Dial(t, endpoint))
	servertest.WaitFor(t, "the retained events b, c, d", func() bool {
		stream, err := client.Events(context.Background(), &apiv1.EventsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for {
			ev, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got += ev.Reason
		}
		return got == "bcd"
	})
}
