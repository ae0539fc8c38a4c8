package server

import (
	"google.golang.org/grpc"

	apiv1 "github.com/probelet/probelet/api/v1alpha1"
	"github.com/probelet/probelet/prober"
)

// WatchResults streams result changes that match the request's container
// reference. A client that stops reading is disconnected with
// ResourceExhausted and its StatusSource subscription cancelled.
func (a *apiService) WatchResults(req *apiv1.WatchResultsRequest, stream grpc.ServerStreamingServer[apiv1.ResultChange]) error {
	r, err := parseRef(req.GetContainer())
	if err != nil {
		return err
	}
	sub, cancel := a.s.status.SubscribeResults(a.s.streamQueue)
	return a.s.streamEnded("WatchResults", relay(stream.Context(), a.s.done, a.s.streamQueue, nil, sub, cancel,
		func(rc prober.ResultChange) (*apiv1.ResultChange, bool) {
			if !r.matches(rc.ContainerID, rc.PodNamespace, rc.PodName, rc.ContainerName) {
				return nil, false
			}
			return pbResultChange(rc), true
		},
		stream.Send))
}

// Events sends the retained probe events that match the request, then,
// with follow, new ones as they happen.
func (a *apiService) Events(req *apiv1.EventsRequest, stream grpc.ServerStreamingServer[apiv1.Event]) error {
	r, err := parseRef(req.GetContainer())
	if err != nil {
		return err
	}
	match := func(ev prober.Event) (*apiv1.Event, bool) {
		if !r.matches(ev.ContainerID, ev.PodNamespace, ev.PodName, ev.ContainerName) {
			return nil, false
		}
		return pbEvent(ev), true
	}
	if !req.GetFollow() {
		return sendMatching(a.s.events.snapshot(), match, stream.Send)
	}
	past, sub, cancel := a.s.events.follow(a.s.streamQueue)
	return a.s.streamEnded("Events", relay(stream.Context(), a.s.done, a.s.streamQueue, matching(past, match), sub, cancel, match, stream.Send))
}

// matching converts the items convert keeps.
func matching[T, M any](items []T, convert func(T) (M, bool)) []M {
	var out []M
	for _, it := range items {
		if m, ok := convert(it); ok {
			out = append(out, m)
		}
	}
	return out
}

// sendMatching sends the items convert keeps.
func sendMatching[T, M any](items []T, convert func(T) (M, bool), send func(M) error) error {
	for _, m := range matching(items, convert) {
		if err := send(m); err != nil {
			return err
		}
	}
	return nil
}
