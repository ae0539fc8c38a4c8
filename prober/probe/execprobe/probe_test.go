package execprobe_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/probe/execprobe"
)

// fakeRunner returns canned results and records the call it got.
type fakeRunner struct {
	stdout, stderr []byte
	code           int32
	err            error

	gotID      string
	gotCmd     []string
	gotTimeout time.Duration
}

var _ execprobe.Runner = (*fakeRunner)(nil)

func (f *fakeRunner) ExecSync(_ context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, int32, error) {
	f.gotID, f.gotCmd, f.gotTimeout = id, cmd, timeout
	return f.stdout, f.stderr, f.code, f.err
}

var (
	errRuntime = errors.New("rpc error: code = NotFound desc = container not found")
	big        = bytes.Repeat([]byte("o"), 1<<20)
	cmd        = []string{"sh", "-c", "cat /tmp/healthy"}
)

func TestProbe(t *testing.T) {
	tests := []struct {
		name       string
		runner     fakeRunner
		wantResult probe.Result
		wantOutput string
		wantErr    error
	}{
		{"exit 0 is success", fakeRunner{stdout: []byte("ok\n")}, probe.Success, "ok\n", nil},
		{"exit 0 with no output", fakeRunner{}, probe.Success, "", nil},
		{"stdout then stderr", fakeRunner{stdout: []byte("out;"), stderr: []byte("err")}, probe.Success, "out;err", nil},
		{"exit 1 is failure", fakeRunner{stdout: []byte("out;"), stderr: []byte("no such file"), code: 1},
			probe.Failure, "out;no such file", nil},
		{"killed is failure", fakeRunner{code: 137}, probe.Failure, "", nil},
		{"negative exit is failure", fakeRunner{code: -1}, probe.Failure, "", nil},
		{"huge stdout is capped", fakeRunner{stdout: big, code: 1}, probe.Failure, string(big[:10240]), nil},
		{"huge stderr is capped", fakeRunner{stderr: big}, probe.Success, string(big[:10240]), nil},
		{"cap spans stdout and stderr", fakeRunner{stdout: bytes.Repeat([]byte("a"), 10000), stderr: bytes.Repeat([]byte("b"), 1000)},
			probe.Success, strings.Repeat("a", 10000) + strings.Repeat("b", 240), nil},
		{"exactly the cap", fakeRunner{stdout: bytes.Repeat([]byte("a"), 10240), stderr: []byte("b")},
			probe.Success, strings.Repeat("a", 10240), nil},
		{"timeout is failure", fakeRunner{err: fmt.Errorf("exec sync: %w", execprobe.ErrTimeout)},
			probe.Failure, `command timed out: "sh -c cat /tmp/healthy" timed out after 2s`, nil},
		{"bare timeout is failure", fakeRunner{err: execprobe.ErrTimeout, stdout: []byte("partial")},
			probe.Failure, `command timed out: "sh -c cat /tmp/healthy" timed out after 2s`, nil},
		{"runtime error is an error", fakeRunner{err: errRuntime, code: 1}, probe.Unknown, "", errRuntime},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.runner
			res, out, err := execprobe.Probe(context.Background(), &r, "c0ffee", cmd, 2*time.Second)
			if res != tc.wantResult || out != tc.wantOutput || !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Fatalf("Probe = (%s, %d bytes %.40q, %v), want (%s, %d bytes %.40q, %v)",
					res, len(out), out, err, tc.wantResult, len(tc.wantOutput), tc.wantOutput, tc.wantErr)
			}
			if r.gotID != "c0ffee" || !slices.Equal(r.gotCmd, cmd) || r.gotTimeout != 2*time.Second {
				t.Errorf("runner got (%q, %q, %v), want (c0ffee, %q, 2s)", r.gotID, r.gotCmd, r.gotTimeout, cmd)
			}
		})
	}
}

// TestProbeCancelledIsError: a probe stopped by its worker is not a
// timeout failure, even if the runner reports one.
func TestProbeCancelledIsError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := &fakeRunner{err: execprobe.ErrTimeout}
	res, _, err := execprobe.Probe(ctx, r, "c0ffee", cmd, time.Second)
	if !errors.Is(err, context.Canceled) || res != probe.Unknown {
		t.Fatalf("Probe(cancelled) = (%s, %v), want unknown and context.Canceled", res, err)
	}
}

func TestProbeBadInput(t *testing.T) {
	tests := []struct {
		name    string
		runner  execprobe.Runner
		id      string
		cmd     []string
		timeout time.Duration
		want    string
	}{
		{"no runner", nil, "c0ffee", cmd, time.Second, "no runner"},
		{"no container", &fakeRunner{}, "", cmd, time.Second, "empty container ID"},
		{"no command", &fakeRunner{}, "c0ffee", nil, time.Second, "container c0ffee: empty command"},
		{"no timeout", &fakeRunner{}, "c0ffee", cmd, 0, "container c0ffee: timeout 0s must be positive"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, _, err := execprobe.Probe(context.Background(), tc.runner, tc.id, tc.cmd, tc.timeout)
			if err == nil || res != probe.Unknown || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Probe = (%s, %v), want unknown and an error containing %q", res, err, tc.want)
			}
		})
	}
}
