package proxy_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/probelet/probelet/cri/proxy"
	"github.com/probelet/probelet/directexec"
	itu "github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/prober/probe/execprobe"
)

// fakeExec is a direct executor: it answers with the result set for the
// test and records its calls and the containers it was told to forget.
type fakeExec struct {
	mu        sync.Mutex
	stdout    []byte
	code      int32
	err       error
	calls     int
	forgotten []string
}

func (f *fakeExec) Exec(_ context.Context, id string, cmd []string, timeout time.Duration) (*directexec.Output, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	return &directexec.Output{Stdout: f.stdout, Stderr: []byte("direct stderr"), ExitCode: f.code}, nil
}

func (f *fakeExec) Forget(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.forgotten = append(f.forgotten, id)
}

func (f *fakeExec) state() (calls int, forgotten []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls, slices.Clone(f.forgotten)
}

// TestExecSyncThroughTheDirectExecutor: with WithDirectExec, ExecSync is
// answered by the executor when it ran the command, and forwarded to the
// runtime — the runtime's own answer, error code included — whenever it
// did not: its fallback (ErrForward), a failure of the helper, no timeout
// in the request. A command that outlived its timeout is containerd's
// DeadlineExceeded, which the kubelet reads as a timed-out probe.
func TestExecSyncThroughTheDirectExecutor(t *testing.T) {
	notFound := status.Error(codes.NotFound, "an error occurred when try to find container \"gone\": not found")
	cases := []struct {
		name        string
		exec        *fakeExec
		timeout     int64
		runtimeErr  error
		wantStdout  string
		wantCode    int32
		wantStatus  codes.Code
		wantMessage string
		wantExec    int // calls to the executor
		wantRuntime int // calls to the runtime
	}{
		{name: "served directly", exec: &fakeExec{stdout: []byte("direct"), code: 3}, timeout: 1,
			wantStdout: "direct", wantCode: 3, wantExec: 1},
		{name: "the executor's fallback", exec: &fakeExec{err: proxy.ErrForward}, timeout: 1,
			wantStdout: "runtime ran [true]", wantCode: 7, wantExec: 1, wantRuntime: 1},
		{name: "the runtime's error forwarded as it is", exec: &fakeExec{err: proxy.ErrForward}, timeout: 1, runtimeErr: notFound,
			wantStatus: codes.NotFound, wantMessage: "an error occurred when try to find container \"gone\": not found", wantExec: 1, wantRuntime: 1},
		{name: "a helper that crashed", exec: &fakeExec{err: errors.New("exec helper: reading its status: EOF")}, timeout: 1,
			wantStdout: "runtime ran [true]", wantCode: 7, wantExec: 1, wantRuntime: 1},
		{name: "no timeout (an exec lifecycle hook)", exec: &fakeExec{stdout: []byte("direct")}, timeout: 0,
			wantStdout: "runtime ran [true]", wantCode: 7, wantRuntime: 1},
		{name: "a negative exit code", exec: &fakeExec{stdout: []byte("direct"), code: -1}, timeout: 1,
			wantStdout: "direct", wantCode: -1, wantExec: 1},
		{name: "output past the kubelet's limit", exec: &fakeExec{err: fmt.Errorf("exec in container c1: %w",
			&directexec.OutputTooLargeError{Stdout: 16 << 20, Stderr: 16 << 20, ExitCode: 0, Limit: 16 << 20})}, timeout: 1,
			wantStatus: codes.ResourceExhausted, wantMessage: "grpc: trying to send message larger than max (33554442 vs. 16777216)", wantExec: 1},
		{name: "the output budget stayed full", exec: &fakeExec{err: fmt.Errorf("exec in container c1: %w: the output of %q waited", directexec.ErrOutputBudget, "yes")}, timeout: 1,
			wantStatus: codes.ResourceExhausted, wantMessage: "exec in container c1: the exec output budget stayed full: the output of \"yes\" waited", wantExec: 1},
		{name: "timed out", exec: &fakeExec{err: fmt.Errorf("%w: %q after 2s", execprobe.ErrTimeout, "sleep 9")}, timeout: 2,
			wantStatus: codes.DeadlineExceeded, wantMessage: "failed to exec in container: timeout 2s exceeded: context deadline exceeded", wantExec: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rt := startFakeRuntime(t)
			if tc.runtimeErr != nil {
				rt.failNext["ExecSync"] = tc.runtimeErr
			}
			h := startProxy(t, rt, proxy.WithDirectExec(tc.exec))
			resp, err := h.cli.ExecSync(context.Background(), &runtimeapi.ExecSyncRequest{ContainerId: "c1", Cmd: []string{"true"}, Timeout: tc.timeout})
			if tc.wantStatus != codes.OK {
				if st := status.Convert(err); st.Code() != tc.wantStatus || st.Message() != tc.wantMessage {
					t.Fatalf("err = %v, want %v %q", err, tc.wantStatus, tc.wantMessage)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if string(resp.Stdout) != tc.wantStdout || resp.ExitCode != tc.wantCode {
					t.Fatalf("answer %q exit %d, want %q exit %d", resp.Stdout, resp.ExitCode, tc.wantStdout, tc.wantCode)
				}
			}
			if calls, _ := tc.exec.state(); calls != tc.wantExec {
				t.Errorf("the executor ran %d calls, want %d", calls, tc.wantExec)
			}
			if n := rt.count("ExecSync"); n != tc.wantRuntime {
				t.Errorf("the runtime got %d calls, want %d", n, tc.wantRuntime)
			}
		})
	}
}

// TestExecSyncForgetsStoppedContainers: the executor drops what it keeps
// about a container when the runtime says it stopped or was deleted.
func TestExecSyncForgetsStoppedContainers(t *testing.T) {
	rt := startFakeRuntime(t)
	exec := &fakeExec{}
	h := startProxy(t, rt, proxy.WithDirectExec(exec))
	h.waitLive(t)
	rt.emit(&runtimeapi.ContainerEventResponse{ContainerId: "c1", ContainerEventType: runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT})
	rt.emit(&runtimeapi.ContainerEventResponse{ContainerId: "c1", ContainerEventType: runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT})
	rt.emit(&runtimeapi.ContainerEventResponse{ContainerId: "c2", ContainerEventType: runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT})
	itu.WaitFor(t, "c1 and c2 forgotten", func() bool {
		_, forgotten := exec.state()
		return slices.Equal(forgotten, []string{"c1", "c2"})
	})
}

// TestRuntimeReplyPastTheKubeletsLimit: a forwarded reply larger than the
// kubelet reads is refused as the kubelet's client refuses it
// (ResourceExhausted), before the proxy holds it; the proxy goes on serving.
func TestRuntimeReplyPastTheKubeletsLimit(t *testing.T) {
	rt := startFakeRuntime(t)
	rt.mu.Lock()
	rt.execStdout = make([]byte, proxy.MaxReplySize)
	rt.mu.Unlock()
	h := startProxy(t, rt)
	_, err := h.cli.ExecSync(ctxT(t), &runtimeapi.ExecSyncRequest{ContainerId: "c1", Cmd: []string{"yes"}, Timeout: 1})
	if st := status.Convert(err); st.Code() != codes.ResourceExhausted || !strings.Contains(st.Message(), "larger than max") {
		t.Fatalf("err = %v, want ResourceExhausted for a message larger than max", err)
	}
	rt.mu.Lock()
	rt.execStdout = nil
	rt.mu.Unlock()
	if _, err := h.cli.ExecSync(ctxT(t), &runtimeapi.ExecSyncRequest{ContainerId: "c1", Cmd: []string{"true"}, Timeout: 1}); err != nil {
		t.Fatalf("the next call: %v", err)
	}
}
