package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Permission problems cannot be produced for root in a test, so the
// mapping is checked here.
func TestPermissionMessages(t *testing.T) {
	want := "permission denied on /run/probelet/probelet.sock: run probectl as root"
	err := statError("/run/probelet/probelet.sock", &fs.PathError{Op: "stat", Path: "x", Err: fs.ErrPermission})
	if !strings.Contains(err.Error(), want) {
		t.Errorf("stat error %q lacks %q", err, want)
	}
	c := &client{path: "/run/probelet/probelet.sock", timeout: time.Second}
	err = c.explain(status.Error(codes.Unavailable,
		`connection error: desc = "transport: Error while dialing: dial unix /run/probelet/probelet.sock: connect: permission denied"`))
	if !strings.Contains(err.Error(), want) || ExitCode(err) != ExitError {
		t.Errorf("dial error %q (exit %d) lacks %q", err, ExitCode(err), want)
	}
}

func TestExplainCodes(t *testing.T) {
	c := &client{path: "/s", timeout: 2 * time.Second}
	tests := []struct {
		err  error
		code int
		msg  string
	}{
		{status.Error(codes.NotFound, `container "x" not found`), ExitNotFound, `container "x" not found`},
		{status.Error(codes.InvalidArgument, "ambiguous"), ExitUsage, "ambiguous"},
		{status.Error(codes.DeadlineExceeded, "context deadline exceeded"), ExitError, "did not answer within 2s"},
		{status.Error(codes.Unimplemented, "unknown service probelet.v1alpha1.Probelet"), ExitError, "does not serve probelet's API"},
		{status.Error(codes.Unavailable, "connect: no such file or directory"), ExitError, "no socket at /s"},
		{status.Error(codes.Unavailable, "probelet is shutting down"), ExitError, "is unavailable: probelet is shutting down"},
		{status.Error(codes.Unavailable, "write unix @->/s: write: broken pipe"), ExitError, "did not answer as probelet's gRPC API"},
		{status.Error(codes.Unavailable, "read: connection reset by peer"), ExitError, "did not answer as probelet's gRPC API"},
		{status.Error(codes.Internal, "boom"), ExitError, "probelet: boom"},
		{errors.New("plain"), ExitError, "plain"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.err), func(t *testing.T) {
			got := c.explain(tt.err)
			if ExitCode(got) != tt.code || !strings.Contains(got.Error(), tt.msg) {
				t.Errorf("explain = %q (exit %d), want exit %d with %q", got, ExitCode(got), tt.code, tt.msg)
			}
		})
	}
	if c.explain(nil) != nil {
		t.Error("explain(nil) != nil")
	}
}

func TestFormatHelpers(t *testing.T) {
	tests := []struct{ got, want string }{
		{shortImage("r/x@sha256:0123456789abcdef", false), "r/x@sha256:0123456789ab"},
		{shortImage("r/x@sha256:0123456789abcdef", true), "r/x@sha256:0123456789abcdef"},
		{shortImage("r/x:1", false), "r/x:1"},
		{oneLine("a\n  b\tc", false), "a b c"},
		{oneLine(strings.Repeat("x", 60), false), strings.Repeat("x", 47) + "..."},
		{stateWord("CONTAINER_EXITED"), "Exited"},
		{stateWord(""), "Unknown"},
		{shortID("abc", false), "abc"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
