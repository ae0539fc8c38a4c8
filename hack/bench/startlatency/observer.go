package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/containerd/nri/pkg/api"
	nrilog "github.com/containerd/nri/pkg/log"
	"github.com/containerd/nri/pkg/stub"
)

// observerIndex sorts the observer before probelet (index 10): NRI relays
// PostStartContainer to plugins one after another in index order, so the
// observer's time is never later than probelet's receipt.
const observerIndex = "00"

// observer is an NRI plugin that records when each container's
// PostStartContainer event arrives.
type observer struct {
	stub stub.Stub
	mu   sync.Mutex
	seen map[string]time.Time
}

var _ stub.PostStartContainerInterface = (*observer)(nil)

// startObserver registers the observer with the runtime's NRI socket.
func startObserver(ctx context.Context, socket string) (*observer, error) {
	o := &observer{seen: map[string]time.Time{}}
	s, err := stub.New(o, stub.WithPluginName("startlatency"), stub.WithPluginIdx(observerIndex),
		stub.WithSocketPath(socket), stub.WithLogger(quietLogger{}))
	if err != nil {
		return nil, err
	}
	if err := s.Start(ctx); err != nil {
		return nil, fmt.Errorf("register the NRI observer: %w", err)
	}
	o.stub = s
	return o, nil
}

// PostStartContainer records the event's arrival and returns at once.
func (o *observer) PostStartContainer(_ context.Context, _ *api.PodSandbox, c *api.Container) error {
	at := time.Now()
	o.mu.Lock()
	o.seen[c.GetId()] = at
	o.mu.Unlock()
	return nil
}

// at is when the container's event arrived.
func (o *observer) at(id string) (time.Time, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	t, ok := o.seen[id]
	return t, ok
}

func (o *observer) stop() { o.stub.Stop() }

// quietLogger keeps the stub's chatter out of the report.
type quietLogger struct{}

func (quietLogger) Debugf(context.Context, string, ...any) {}
func (quietLogger) Infof(context.Context, string, ...any)  {}
func (quietLogger) Warnf(_ context.Context, f string, a ...any) {
	fmt.Fprintf(os.Stderr, "nri observer: "+f+"\n", a...)
}
func (quietLogger) Errorf(_ context.Context, f string, a ...any) {
	fmt.Fprintf(os.Stderr, "nri observer: "+f+"\n", a...)
}

var _ nrilog.Logger = quietLogger{}
