package killer_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/probelet/probelet/internal/procstat"
	"github.com/probelet/probelet/killer"
	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober"
)

// fakeRuntime answers ContainerStatus for c1 and records the stops.
type fakeRuntime struct {
	status    *runtimeapi.ContainerStatusResponse // nil: c1 is unknown (NotFound)
	statusErr error
	stopErr   error
	pid       int32 // the runtime's pid as seen here (RuntimePid)

	mu    sync.Mutex
	stops []time.Duration // the grace of each StopContainer
}

func (f *fakeRuntime) RuntimePid() int32 { return f.pid }

func (f *fakeRuntime) ContainerStatus(_ context.Context, id string) (*runtimeapi.ContainerStatusResponse, error) {
	switch {
	case f.statusErr != nil:
		return nil, f.statusErr
	case f.status == nil || id != "c1":
		return nil, fmt.Errorf("container %s status: %w", id, status.Error(codes.NotFound, "not found"))
	}
	return f.status, nil
}

func (f *fakeRuntime) StopContainer(ctx context.Context, _ string, grace time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stops = append(f.stops, grace)
	if err := ctx.Err(); err != nil {
		return status.Error(codes.Canceled, err.Error()) // as grpc-go's client says it
	}
	return f.stopErr
}

func running() *runtimeapi.ContainerStatusResponse {
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{State: runtimeapi.ContainerState_CONTAINER_RUNNING}}
}

// kill runs one kill to its end and returns what it reported.
func kill(t *testing.T, k *killer.Killer, req prober.Kill) []prober.KillOutcome {
	t.Helper()
	report := make(chan prober.KillOutcome, 8)
	k.KillContainer(context.Background(), req, report)
	close(report)
	var got []prober.KillOutcome
	for o := range report {
		got = append(got, o)
	}
	if len(got) == 0 || !got[len(got)-1].Kind.Final() {
		t.Fatalf("outcomes %v: the last must be final", got)
	}
	return got
}

func kinds(os []prober.KillOutcome) string {
	var s []string
	for _, o := range os {
		s = append(s, o.Kind.String())
	}
	return strings.Join(s, ",")
}

func TestGracePeriodIsTheKubeletsAtLeast(t *testing.T) {
	tests := []struct {
		grace, want time.Duration
	}{
		{30 * time.Second, 30 * time.Second},
		{time.Second, 2 * time.Second}, // the kubelet's minimum
		{0, 2 * time.Second},
		{2500 * time.Millisecond, 2500 * time.Millisecond}, // cri/client rounds up to whole seconds
	}
	core, logs := observer.New(zap.InfoLevel)
	const msg = "Container web failed liveness probe, will be restarted"
	for _, tt := range tests {
		rt := &fakeRuntime{status: running()}
		k, err := killer.New(rt, killer.WithLogger(zap.New(core)), killer.WithProcRoot(t.TempDir()))
		if err != nil {
			t.Fatal(err)
		}
		if got := kinds(kill(t, k, prober.Kill{ContainerID: "c1", GracePeriod: tt.grace, Reason: msg})); got != "Issued,Done" {
			t.Fatalf("grace %s: outcomes %s, want Issued,Done", tt.grace, got)
		}
		if !slices.Equal(rt.stops, []time.Duration{tt.want}) {
			t.Errorf("grace %s: stops %v, want one with %s", tt.grace, rt.stops, tt.want)
		}
	}
	if n := logs.FilterMessage("Killing container with a grace period").FilterField(zap.String("reason", msg)).Len(); n != len(tests) {
		t.Errorf("logged %d kills with the kubelet's reason, want %d", n, len(tests))
	}
}

// The engine decides on its own view; a container whose exit has not
// reached it yet must not be stopped, nor reported as killed.
func TestAKillAsksTheRuntimeThenTheKernelFirst(t *testing.T) {
	tests := []struct {
		name      string
		status    *runtimeapi.ContainerStatusResponse // nil: the runtime does not know c1
		statusErr error
		stopErr   error
		procs     map[uint32]task // the fake /proc; init is 100, sandbox 50
		// noSandbox: the pod has no sandbox process (CRI-O without an
		// infra container; its NRI says pid 0); runtimePid is the
		// runtime's pid, the witness then.
		noSandbox  bool
		runtimePid int32
		want       string // the outcomes
	}{
		{name: "running", status: running(), want: "Issued,Done"},
		{name: "exited on its own", status: &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{
			State: runtimeapi.ContainerState_CONTAINER_EXITED, ExitCode: 0}}, want: "NotRunning"},
		{name: "gone", want: "NotRunning"},
		{name: "runtime cannot tell: the kill goes ahead", statusErr: status.Error(codes.Unavailable, "busy"), want: "Issued,Done"},
		{name: "removed between check and stop", status: running(), stopErr: fmt.Errorf("stop: %w", status.Error(codes.NotFound, "gone")), want: "Issued,Done"},
		{name: "stop fails", status: running(), stopErr: status.Error(codes.Internal, "shim dead"), want: "Issued,Failed"},
		// containerd says RUNNING until it has processed the exit; the kernel knows first.
		{name: "init reaped, exit not processed yet", status: running(), procs: map[uint32]task{50: sleeping}, want: "NotRunning"},
		{name: "init a zombie", status: running(), procs: map[uint32]task{50: sleeping, 100: {state: "Z", flags: procstat.FlagExiting}}, want: "NotRunning"},
		// The init waits for its namespace's other processes (an exec
		// probe's) to be reaped before it turns zombie.
		{name: "init exiting", status: running(), procs: map[uint32]task{50: sleeping, 100: {state: "S", flags: procstat.FlagExiting | pfRandomize}}, want: "NotRunning"},
		{name: "init sleeping", status: running(), procs: map[uint32]task{50: sleeping, 100: sleeping}, want: "Issued,Done"},
		{name: "init sleeping, stat unreadable", status: running(), procs: map[uint32]task{50: sleeping, 100: {state: "S", malformed: true}}, want: "Issued,Done"},
		{name: "pids not visible (no hostPID)", status: running(), procs: map[uint32]task{}, want: "Issued,Done"},
		{name: "no sandbox process: init reaped, the runtime visible", status: running(), noSandbox: true, runtimePid: 60,
			procs: map[uint32]task{60: sleeping}, want: "NotRunning"},
		{name: "no sandbox process: init sleeping", status: running(), noSandbox: true, runtimePid: 60,
			procs: map[uint32]task{60: sleeping, 100: sleeping}, want: "Issued,Done"},
		{name: "no sandbox process, runtime not visible", status: running(), noSandbox: true, procs: map[uint32]task{}, want: "Issued,Done"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rt := &fakeRuntime{status: tc.status, statusErr: tc.statusErr, stopErr: tc.stopErr, pid: tc.runtimePid}
			k, err := killer.New(rt, killer.WithProcRoot(fakeProc(t, tc.procs)))
			if err != nil {
				t.Fatal(err)
			}
			sandboxPid := uint32(50)
			if tc.noSandbox {
				sandboxPid = 0
			}
			got := kill(t, k, prober.Kill{ContainerID: "c1", GracePeriod: time.Second, Pid: 100, SandboxPid: sandboxPid})
			if kinds(got) != tc.want {
				t.Fatalf("outcomes %s (%+v), want %s", kinds(got), got, tc.want)
			}
			last := got[len(got)-1]
			if last.Kind == prober.KillNotRunning && !errors.Is(last.Err, node.ErrNotRunning) {
				t.Errorf("NotRunning with %v, want an error wrapping node.ErrNotRunning", last.Err)
			}
			if stopped := len(rt.stops) > 0; stopped != strings.HasPrefix(tc.want, "Issued") {
				t.Errorf("stopped: %v, want a stop exactly when issued", stopped)
			}
		})
	}
}

// task is a process in the fake /proc.
type task struct {
	state     string // the state letter
	flags     uint64 // the kernel's PF_* flags
	malformed bool   // a stat line cut short
}

// pfRandomize is an unrelated task flag (include/linux/sched.h): set on
// every process while ASLR is on.
const pfRandomize = 0x400000

var sleeping = task{state: "S", flags: pfRandomize}

// fakeProc writes /proc/<pid>/stat files for the given tasks, with all 52
// fields as the kernel writes them.
func fakeProc(t *testing.T, tasks map[uint32]task) string {
	t.Helper()
	root := t.TempDir()
	for pid, tk := range tasks {
		dir := filepath.Join(root, fmt.Sprint(pid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		// comm with a space and a parenthesis, as the kernel allows
		stat := fmt.Sprintf("%d (sh (x) y) %s 1 %d %d 0 -1 %d", pid, tk.state, pid, pid, tk.flags) + strings.Repeat(" 0", 52-9)
		if tk.malformed {
			stat = fmt.Sprintf("%d (sh (x) y) %s 1", pid, tk.state)
		}
		if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(stat+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestNewRefusesNoRuntime(t *testing.T) {
	if _, err := killer.New(nil); err == nil {
		t.Fatal("New(nil) succeeded")
	}
	if _, err := killer.New(&fakeRuntime{}, killer.WithProcRoot("")); err == nil {
		t.Fatal("an empty proc root was accepted")
	}
}

// cancelledFirst is a runtime whose stop waits until the caller's cancel
// happened.
type cancelledFirst struct {
	*fakeRuntime
	cancelled chan struct{}
}

func (c cancelledFirst) StopContainer(ctx context.Context, id string, grace time.Duration) error {
	<-c.cancelled
	return c.fakeRuntime.StopContainer(ctx, id, grace)
}

// TestIssuedKillOutlivesTheCallersCancel: probelet shutting down (its
// context cancelled) once a kill is issued still stops the container, and
// reports it done, not failed.
func TestIssuedKillOutlivesTheCallersCancel(t *testing.T) {
	rt := cancelledFirst{&fakeRuntime{status: running()}, make(chan struct{})}
	k, err := killer.New(rt, killer.WithProcRoot(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	report := make(chan prober.KillOutcome, 8)
	done := make(chan struct{})
	var got []prober.KillOutcome
	go func() {
		defer close(done)
		for o := range report {
			got = append(got, o)
			if o.Kind == prober.KillIssued {
				cancel() // the agent's shutdown, right after the issue
				close(rt.cancelled)
			}
		}
	}()
	k.KillContainer(ctx, prober.Kill{ContainerID: "c1", GracePeriod: 2 * time.Second}, report)
	close(report)
	<-done
	if kinds(got) != "Issued,Done" {
		t.Fatalf("outcomes %v, want Issued,Done: a cancel after the issue must not stop the stop", got)
	}
}

// stopUntilCancelled is a runtime whose stop lasts until its context ends:
// a container that ignores SIGTERM, within a long grace period.
type stopUntilCancelled struct{ *fakeRuntime }

func (s stopUntilCancelled) StopContainer(ctx context.Context, _ string, _ time.Duration) error {
	<-ctx.Done()
	return status.Error(codes.Canceled, ctx.Err().Error())
}

// TestIssuedKillDrainsThenEnds: a stop still going on when probelet shuts
// down is given IssuedKillDrain, then cancelled and reported failed: the
// shutdown is not held for the grace period.
func TestIssuedKillDrainsThenEnds(t *testing.T) {
	fc := clocktesting.NewFakeClock(time.Unix(0, 0))
	k, err := killer.New(stopUntilCancelled{&fakeRuntime{status: running()}}, killer.WithProcRoot(t.TempDir()), killer.WithClock(fc))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	report := make(chan prober.KillOutcome, 8)
	done := make(chan struct{})
	go func() {
		defer close(done)
		k.KillContainer(ctx, prober.Kill{ContainerID: "c1", GracePeriod: 30 * time.Second}, report)
	}()
	if o := <-report; o.Kind != prober.KillIssued {
		t.Fatalf("first outcome %v, want Issued", o)
	}
	cancel()
	for !fc.HasWaiters() { // the drain's timer, set once the cancel is seen
		time.Sleep(time.Millisecond)
	}
	select {
	case <-done:
		t.Fatal("the stop ended at the cancel, before the drain")
	default:
	}
	fc.Step(killer.IssuedKillDrain)
	<-done
	close(report)
	if o := <-report; o.Kind != prober.KillFailed {
		t.Fatalf("outcome after the drain %v, want Failed", o)
	}
}
