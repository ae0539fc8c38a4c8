package plugin_test

import (
	"context"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/net/multiplex"
	"github.com/containerd/ttrpc"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/probelet/probelet/internal/retry"
	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/lifecycle"
	"github.com/probelet/probelet/plugin"
)

// muteRuntime is a runtime that answers RegisterPlugin and then never
// sends Configure: containerd dying or restarting between the two. The NRI
// stub's Start waits for Configure with no way out.
type muteRuntime struct {
	t     *testing.T
	l     net.Listener
	mu    sync.Mutex
	conns []*hangUpConn
	wg    sync.WaitGroup
}

func startMuteRuntime(t *testing.T, socket string) *muteRuntime {
	t.Helper()
	l, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	r := &muteRuntime{t: t, l: l}
	r.wg.Add(1)
	go r.accept()
	t.Cleanup(r.close)
	return r
}

func (r *muteRuntime) accept() {
	defer r.wg.Done()
	for {
		c, err := r.l.Accept()
		if err != nil {
			return
		}
		hc := &hangUpConn{Conn: c, gone: make(chan struct{})}
		r.mu.Lock()
		r.conns = append(r.conns, hc)
		r.mu.Unlock()
		r.serve(hc)
	}
}

// serve sets up the runtime side of one plugin connection the way
// pkg/adaptation does: multiplex it, serve the runtime service on its
// channel.
func (r *muteRuntime) serve(c *hangUpConn) {
	mux := multiplex.Multiplex(c, multiplex.WithBlockedRead())
	l, err := mux.Listen(multiplex.RuntimeServiceConn)
	if err != nil {
		r.t.Error(err)
		mux.Close()
		return
	}
	srv, err := ttrpc.NewServer()
	if err != nil {
		r.t.Error(err)
		mux.Close()
		return
	}
	api.RegisterRuntimeService(srv, registrar{})
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		srv.Serve(context.Background(), l)
	}()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		<-c.gone
		srv.Close()
		mux.Close()
	}()
	mux.Unblock()
}

// dropAll closes every plugin connection: the runtime exits.
func (r *muteRuntime) dropAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.conns {
		c.Close()
	}
}

// lastConn is the runtime's end of the latest plugin connection.
func (r *muteRuntime) lastConn() *hangUpConn {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.conns) == 0 {
		return nil
	}
	return r.conns[len(r.conns)-1]
}

func (r *muteRuntime) close() {
	r.l.Close()
	r.dropAll()
	r.wg.Wait()
}

// registrar accepts every registration and stays silent afterwards.
type registrar struct{}

func (registrar) RegisterPlugin(context.Context, *api.RegisterPluginRequest) (*api.Empty, error) {
	return &api.Empty{}, nil
}

func (registrar) UpdateContainers(context.Context, *api.UpdateContainersRequest) (*api.UpdateContainersResponse, error) {
	return &api.UpdateContainersResponse{}, nil
}

// hangUpConn notices when the peer hangs up (or the connection is closed).
type hangUpConn struct {
	net.Conn
	once sync.Once
	gone chan struct{}
}

func (c *hangUpConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil {
		c.once.Do(func() { close(c.gone) })
	}
	return n, err
}

func (c *hangUpConn) Close() error {
	c.once.Do(func() { close(c.gone) })
	return c.Conn.Close()
}

// stuckInStart counts goroutines parked in the stub's Start on a channel
// receive: waiting for a Configure that may never come. It is how the test
// knows the plugin reached that window rather than guessing with a sleep.
func stuckInStart() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		header, rest, _ := strings.Cut(g, "\n")
		if strings.Contains(header, "[chan receive") &&
			strings.HasPrefix(rest, "github.com/containerd/nri/pkg/stub.(*stub).Start(") {
			count++
		}
	}
	return count
}

func TestRegistrationThatNeverConfiguresIsRetried(t *testing.T) {
	tests := []struct {
		name string
		// unstick ends the wait for Configure.
		unstick func(mute *muteRuntime, clk *clocktesting.FakeClock, cancel context.CancelFunc)
		// wantErr is in the logged registration failure; empty means
		// Run returns (ctx cancelled) without counting a failure.
		wantErr string
		// hangsUp says the plugin, not the runtime, closes the connection.
		hangsUp bool
	}{
		{
			name:    "runtime closes the connection",
			unstick: func(mute *muteRuntime, _ *clocktesting.FakeClock, _ context.CancelFunc) { mute.dropAll() },
			wantErr: "runtime closed the connection before configuring the plugin",
		},
		{
			name: "runtime stays silent",
			unstick: func(_ *muteRuntime, clk *clocktesting.FakeClock, _ context.CancelFunc) {
				clk.Step(plugin.DefaultRegistrationTimeout)
			},
			wantErr: "runtime did not configure the plugin within 10s",
			hangsUp: true,
		},
		{
			name:    "stopped while waiting",
			unstick: func(_ *muteRuntime, _ *clocktesting.FakeClock, cancel context.CancelFunc) { cancel() },
			hangsUp: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := newFakeRuntime(t)
			rt.stop() // the socket is the mute runtime's for now
			mute := startMuteRuntime(t, rt.socket)

			clk := clocktesting.NewFakeClock(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))
			reg := prometheus.NewRegistry()
			core, logs := observer.New(zap.WarnLevel)
			cache, err := lifecycle.New(newRecordingSink())
			if err != nil {
				t.Fatal(err)
			}
			p, err := plugin.New(cache, plugin.WithSocketPath(rt.socket), plugin.WithClock(clk),
				plugin.WithRegisterer(reg), plugin.WithLogger(zap.New(core)),
				plugin.WithBackoff(100*time.Millisecond, time.Second))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			before := stuckInStart()
			done := make(chan error, 1)
			go func() { done <- p.Run(ctx) }()
			t.Cleanup(func() {
				cancel()
				select {
				case <-done:
				case <-time.After(5 * time.Second):
					t.Error("Run still running 5s after ctx was cancelled")
				}
			})

			testutil.WaitFor(t, "the plugin waiting for Configure", func() bool { return stuckInStart() > before })
			conn := mute.lastConn()
			start := time.Now()
			tt.unstick(mute, clk, cancel)

			failures := func() float64 { return testutil.Metric(t, reg, "probelet_nri_registration_failures_total", nil) }
			if tt.wantErr == "" {
				select {
				case err := <-done:
					if err != nil {
						t.Errorf("Run = %v, want nil", err)
					}
					done <- nil // for the cleanup
				case <-time.After(2 * time.Second):
					t.Fatal("Run did not return within 2s of ctx being cancelled")
				}
				t.Logf("Run returned %s after cancel", time.Since(start))
				if f := failures(); f != 0 {
					t.Errorf("registration failures = %v, want 0 when stopped", f)
				}
			} else {
				testutil.WaitFor(t, "a registration failure", func() bool { return failures() == 1 && clk.HasWaiters() })
				t.Logf("registration failed %s after unsticking", time.Since(start))
				checkFailureLogged(t, logs, tt.wantErr)
			}
			if tt.hangsUp {
				testutil.WaitFor(t, "the plugin hanging up", func() bool {
					select {
					case <-conn.gone:
						return true
					default:
						return false
					}
				})
			}
			if tt.wantErr == "" {
				return
			}

			mute.close()
			rt.start()                                                                  // the runtime is back at the same socket
			clk.Step(time.Duration(float64(100*time.Millisecond) * (1 + retry.Jitter))) // the longest first wait
			testutil.WaitFor(t, "registration with the restarted runtime", p.Connected)
			if f := failures(); f != 1 {
				t.Errorf("registration failures = %v, want 1", f)
			}
		})
	}
}

func checkFailureLogged(t *testing.T, logs *observer.ObservedLogs, want string) {
	t.Helper()
	entries := logs.FilterMessage("Cannot register with the runtime over NRI, retrying").All()
	if len(entries) != 1 {
		t.Fatalf("logged %d registration failures, want 1", len(entries))
	}
	got, _ := entries[0].ContextMap()["error"].(string)
	if !strings.Contains(got, want) {
		t.Errorf("logged error %q, want it to contain %q", got, want)
	}
}

func TestRegistrationTimeoutOption(t *testing.T) {
	tests := []struct {
		d       time.Duration
		wantErr bool
	}{
		{time.Second, false},
		{0, true},
		{-time.Second, true},
	}
	for _, tt := range tests {
		_, err := plugin.New(panickyCache{}, plugin.WithRegistrationTimeout(tt.d))
		if (err != nil) != tt.wantErr {
			t.Errorf("WithRegistrationTimeout(%s): err = %v, want error %v", tt.d, err, tt.wantErr)
		}
	}
}
