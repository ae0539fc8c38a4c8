package directexec

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/probelet/probelet/prober/probe/execprobe"
)

func TestOutcomeIsExecSyncs(t *testing.T) {
	cmd := []string{"sleep", "5"}
	tests := []struct {
		line     string
		wantCode int32
		wantErr  error  // matched with errors.Is
		wantText string // in the error
		fallback bool
	}{
		{line: "exit 0", wantCode: 0},
		{line: "exit 3", wantCode: 3},
		{line: "signal 9", wantCode: 137}, // the runtime's status of a killed process
		{line: "timeout", wantErr: execprobe.ErrTimeout, wantText: `"sleep 5" after 1s`},
		{line: "exec-error exec: \"nope\": executable file not found in $PATH",
			wantText: `unable to start container process: exec: "nope": executable file not found in $PATH`},
		{line: "setup-error setns into the mnt namespace: Operation not permitted", fallback: true},
		{line: "gone the container's init process 7 exited", wantErr: errNotRunning},
		{line: "container-exited", wantErr: errNotRunning, wantText: "exited while the command ran"},
		{line: "paused", wantErr: errPaused, wantText: "cannot exec in a paused container"},
		{line: "cancelled", wantErr: context.Canceled},
		{line: "exit three", wantText: "status"},
		{line: "bogus", wantText: `status "bogus"`},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			code, err := outcome(context.Background(), tt.line, cmd, time.Second)
			var u *unsupported
			switch {
			case tt.fallback:
				if !errors.As(err, &u) || u.reason != reasonSetup {
					t.Fatalf("outcome = %v, want a setup fallback", err)
				}
			case tt.wantErr == nil && tt.wantText == "":
				if err != nil || code != tt.wantCode {
					t.Fatalf("outcome = %d, %v; want %d", code, err, tt.wantCode)
				}
			default:
				if err == nil || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) || !strings.Contains(err.Error(), tt.wantText) {
					t.Fatalf("outcome = %d, %v; want an error %v containing %q", code, err, tt.wantErr, tt.wantText)
				}
			}
		})
	}
}

func TestRecords(t *testing.T) {
	var w records
	w.str('A', "sh")
	w.u32('O', 7)
	w.u64('T', 1000)
	w.add('Z', nil)
	var got []string
	err := readRecords(append(w.bytes(), "trailing bytes after the end"...), func(tag byte, p []byte) error {
		got = append(got, string(tag)+string(rune('0'+len(p))))
		return nil
	})
	if err != nil || strings.Join(got, " ") != "A2 O4 T8" {
		t.Fatalf("readRecords = %q, %v", got, err)
	}
	for name, b := range map[string][]byte{
		"no end":         w.bytes()[:len(w.bytes())-5],
		"short header":   {'A', 1, 0},
		"short payload":  {'A', 9, 0, 0, 0, 'x'},
		"nothing at all": nil,
	} {
		if err := readRecords(b, func(byte, []byte) error { return nil }); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestWaitDrains: the wait ends when both outputs are read to their end,
// or, with a writer still holding one open, as soon as the caller's ctx
// ends — and then with ctx's error and both reads over.
func TestWaitDrains(t *testing.T) {
	for _, tc := range []struct {
		name     string
		holdOpen bool // a writer keeps stdout open
		cancel   bool
		want     error
	}{
		{name: "both-closed", want: nil},
		{name: "held-open-ctx-ends", holdOpen: true, cancel: true, want: context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outR, outW, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			errR, errW, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer outW.Close()
			var wg sync.WaitGroup
			var stdout, stderr capped
			stdout.limit, stderr.limit = 16, 16
			wg.Add(2)
			far := time.Now().Add(time.Hour)
			go drain(outR, far, &stdout, &wg)
			go drain(errR, far, &stderr, &wg)
			if _, err := outW.WriteString("out"); err != nil {
				t.Fatal(err)
			}
			errW.Close()
			if !tc.holdOpen {
				outW.Close()
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel {
				time.AfterFunc(10*time.Millisecond, cancel)
			}
			done := make(chan error, 1)
			go func() { done <- waitDrains(ctx, &wg, outR, errR) }()
			select {
			case err := <-done:
				if !errors.Is(err, tc.want) || (err == nil) != (tc.want == nil) {
					t.Fatalf("waitDrains = %v, want %v", err, tc.want)
				}
			case <-time.After(time.Minute):
				t.Fatal("waitDrains did not return")
			}
			if string(stdout.b) != "out" {
				t.Errorf("stdout read %q, want %q", stdout.b, "out")
			}
			if stdout.late != tc.holdOpen {
				t.Errorf("stdout ended by the deadline: %v, want %v", stdout.late, tc.holdOpen)
			}
		})
	}
}
