package killer_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/killer"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/probe/httpprobe"
)

// steps is the order things happened in: the hook's start and end, the stop.
type steps struct {
	mu  sync.Mutex
	log []string
}

func (s *steps) add(step string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, step)
}

func (s *steps) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strconv.Quote(strings.Join(s.log, ","))
}

// orderedRuntime is a runtime whose c1 runs and whose stops are steps.
type orderedRuntime struct {
	fakeRuntime
	steps *steps
}

func (o *orderedRuntime) StopContainer(ctx context.Context, id string, grace time.Duration) error {
	o.steps.add("stop " + grace.String())
	return o.fakeRuntime.StopContainer(ctx, id, grace)
}

// hookExec is an exec runner whose command runs until the test releases
// it (exit code), or until its context ends.
type hookExec struct {
	steps   *steps
	started chan []string
	release chan int32
	timeout time.Duration
}

func (h *hookExec) ExecSync(ctx context.Context, _ string, cmd []string, timeout time.Duration) ([]byte, []byte, int32, error) {
	h.steps.add("exec")
	h.timeout = timeout
	h.started <- cmd
	select {
	case code := <-h.release:
		h.steps.add("exec end")
		return []byte("out"), nil, code, nil
	case <-ctx.Done():
		h.steps.add("exec cut")
		return nil, nil, 0, ctx.Err()
	}
}

// hookCase is a kill with a preStop hook, driven on a fake clock.
type hookCase struct {
	name string
	hook prober.Hook
	// run plays the hook's part: releases the command, steps the clock.
	run         func(t *testing.T, c *clocktesting.FakeClock, x *hookExec)
	wantSteps   string
	wantHookErr bool
}

// waitForTimer waits until the killer (or the hook) waits on the clock.
func waitForTimer(t *testing.T, c *clocktesting.FakeClock) {
	t.Helper()
	testutil.WaitFor(t, "a timer on the clock", c.HasWaiters)
}

// The kubelet's killContainer: the hook runs first, at most its grace;
// the stop gets what is left in whole seconds (truncated), never under
// 2 s; a failing hook is reported and the kill goes on.
func TestPreStopHookRunsBeforeTheStopWithinTheGrace(t *testing.T) {
	exec := func(grace time.Duration) prober.Hook {
		return prober.Hook{Kind: prober.HookExec, Command: []string{"drain"}, Grace: grace}
	}
	tests := []hookCase{
		{name: "exec that ends at once leaves the whole grace", hook: exec(30 * time.Second),
			run:       func(t *testing.T, c *clocktesting.FakeClock, x *hookExec) { <-x.started; x.release <- 0 },
			wantSteps: "exec,exec end,stop 30s"},
		{name: "exec taking 5.5 s leaves 25 s (whole seconds off)", hook: exec(30 * time.Second),
			run: func(t *testing.T, c *clocktesting.FakeClock, x *hookExec) {
				<-x.started
				waitForTimer(t, c)
				c.Step(5500 * time.Millisecond)
				x.release <- 0
			},
			wantSteps: "exec,exec end,stop 25s"},
		{name: "exec exiting 1 fails, the kill goes on", hook: exec(30 * time.Second),
			run:       func(t *testing.T, c *clocktesting.FakeClock, x *hookExec) { <-x.started; x.release <- 1 },
			wantSteps: "exec,exec end,stop 30s", wantHookErr: true},
		{name: "exec outliving the grace: the stop gets 2 s, the hook ends after it", hook: exec(10 * time.Second),
			run: func(t *testing.T, c *clocktesting.FakeClock, x *hookExec) {
				<-x.started
				waitForTimer(t, c)
				c.Step(10 * time.Second)
				waitForTimer(t, c) // the wait after the stop
				c.Step(2 * time.Second)
			},
			wantSteps: "exec,stop 2s,exec cut", wantHookErr: true},
		{name: "sleep 3 s leaves 27 s", hook: prober.Hook{Kind: prober.HookSleep, Sleep: 3 * time.Second, Grace: 30 * time.Second},
			run: func(t *testing.T, c *clocktesting.FakeClock, x *hookExec) {
				waitForTimer(t, c)
				c.Step(3 * time.Second)
			},
			wantSteps: "stop 27s"},
		{name: "sleep longer than the grace is not a failure", hook: prober.Hook{Kind: prober.HookSleep, Sleep: time.Minute, Grace: 5 * time.Second},
			run: func(t *testing.T, c *clocktesting.FakeClock, x *hookExec) {
				waitForTimer(t, c)
				c.Step(5 * time.Second)
				// The sleep still waits on the clock: past the stop, a step
				// ends both it and the wait after the stop.
				testutil.WaitFor(t, "the stop", func() bool { return strings.Contains(x.steps.String(), "stop") })
				c.Step(time.Minute)
			},
			wantSteps: "stop 2s"},
		{name: "a hook that cannot run fails at once", hook: prober.Hook{Kind: prober.HookHTTP, Err: errors.New(`probe host "10.1.2.3" is not dialed`), Grace: 30 * time.Second},
			run:       func(*testing.T, *clocktesting.FakeClock, *hookExec) {},
			wantSteps: "stop 30s", wantHookErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := clocktesting.NewFakeClock(time.Unix(1_000_000, 0))
			st := &steps{}
			x := &hookExec{steps: st, started: make(chan []string, 1), release: make(chan int32, 1)}
			rt := &orderedRuntime{fakeRuntime: fakeRuntime{status: running()}, steps: st}
			k, err := killer.New(rt, killer.WithProcRoot(t.TempDir()), killer.WithClock(c), killer.WithExecRunner(x))
			if err != nil {
				t.Fatal(err)
			}
			hook := tc.hook
			done := make(chan []prober.KillOutcome, 1)
			go func() {
				done <- kill(t, k, prober.Kill{ContainerID: "c1", GracePeriod: max(hook.Grace, 2*time.Second), PreStop: &hook})
			}()
			tc.run(t, c, x)
			got := <-done
			if kinds(got) != "Issued,HookRan,Done" {
				t.Fatalf("outcomes %s, want Issued,HookRan,Done", kinds(got))
			}
			if res := got[1].Hook; res == nil || (res.Err != nil) != tc.wantHookErr {
				t.Errorf("hook result %+v, want failed=%v", res, tc.wantHookErr)
			}
			if st.String() != strconv.Quote(tc.wantSteps) {
				t.Errorf("steps %s, want %q", st, tc.wantSteps)
			}
			if hook.Kind == prober.HookExec && x.timeout != hook.Grace {
				t.Errorf("the command ran with timeout %v, want the grace %v", x.timeout, hook.Grace)
			}
		})
	}
}

// The kubelet's httpGet hook: any answer succeeds (a 500 too), its
// User-Agent is kube-lifecycle's, and it reaches the pod before the stop;
// a failure to get an answer fails it.
func TestPreStopHTTPHook(t *testing.T) {
	st := &steps{}
	agents := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st.add("GET " + r.URL.Path)
		agents <- r.UserAgent()
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	host, port := hostPort(t, srv.Listener.Addr())

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, refused := hostPort(t, closed.Addr())
	closed.Close()

	tests := []struct {
		name    string
		port    int
		want    string
		wantErr bool
	}{
		{"a 500 is an answer", port, "GET /drain,stop 30s", false},
		{"no answer fails", refused, "stop 30s", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st.mu.Lock()
			st.log = nil
			st.mu.Unlock()
			rt := &orderedRuntime{fakeRuntime: fakeRuntime{status: running()}, steps: st}
			k, err := killer.New(rt, killer.WithProcRoot(t.TempDir()))
			if err != nil {
				t.Fatal(err)
			}
			hook := prober.Hook{Kind: prober.HookHTTP, HTTP: httpprobe.Target{Host: host, Port: tc.port, Path: "/drain"}, Grace: 30 * time.Second}
			got := kill(t, k, prober.Kill{ContainerID: "c1", GracePeriod: 30 * time.Second, PreStop: &hook})
			if kinds(got) != "Issued,HookRan,Done" || (got[1].Hook.Err != nil) != tc.wantErr {
				t.Fatalf("outcomes %s, hook %+v, want Issued,HookRan,Done, failed=%v", kinds(got), got[1].Hook, tc.wantErr)
			}
			if st.String() != strconv.Quote(tc.want) {
				t.Errorf("steps %s, want %q", st, tc.want)
			}
			if !tc.wantErr {
				if ua := <-agents; ua != httpprobe.LifecycleUserAgent {
					t.Errorf("User-Agent %q, want %q", ua, httpprobe.LifecycleUserAgent)
				}
			}
		})
	}
}

// An HTTPS hook answered in plain HTTP is sent again over HTTP without
// its Authorization header, and says so (the kubelet's
// LifecycleHTTPFallback).
func TestPreStopHTTPSHookFallsBackToHTTP(t *testing.T) {
	auth := make(chan string, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth <- r.Header.Get("Authorization")
	}))
	defer srv.Close()
	host, port := hostPort(t, srv.Listener.Addr())
	k, err := killer.New(&fakeRuntime{status: running()}, killer.WithProcRoot(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	hook := prober.Hook{Kind: prober.HookHTTP, Grace: 30 * time.Second, HTTP: httpprobe.Target{
		Scheme: "HTTPS", Host: host, Port: port, Path: "/", Headers: []corev1.HTTPHeader{{Name: "Authorization", Value: "Bearer secret"}}}}
	got := kill(t, k, prober.Kill{ContainerID: "c1", GracePeriod: 30 * time.Second, PreStop: &hook})
	if kinds(got) != "Issued,HookRan,Done" {
		t.Fatalf("outcomes %s", kinds(got))
	}
	res := got[1].Hook
	if res.Err != nil || res.FellBackToHTTP != net.JoinHostPort(host, strconv.Itoa(port)) {
		t.Fatalf("hook %+v, want success after falling back to %s:%d", res, host, port)
	}
	if a := <-auth; a != "" {
		t.Errorf("the HTTP retry sent Authorization %q", a)
	}
}

// A kill of a container no longer running runs no hook.
func TestNoHookForAContainerThatExited(t *testing.T) {
	st := &steps{}
	x := &hookExec{steps: st, started: make(chan []string, 1), release: make(chan int32, 1)}
	k, err := killer.New(&fakeRuntime{}, killer.WithProcRoot(t.TempDir()), killer.WithExecRunner(x))
	if err != nil {
		t.Fatal(err)
	}
	hook := prober.Hook{Kind: prober.HookExec, Command: []string{"drain"}, Grace: 30 * time.Second}
	if got := kinds(kill(t, k, prober.Kill{ContainerID: "c1", GracePeriod: 30 * time.Second, PreStop: &hook})); got != "NotRunning" {
		t.Fatalf("outcomes %s, want NotRunning", got)
	}
	if st.String() != `""` {
		t.Errorf("steps %s: the hook ran", st)
	}
}

func hostPort(t *testing.T, a net.Addr) (string, int) {
	t.Helper()
	h, p, err := net.SplitHostPort(a.String())
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(p)
	return h, n
}
