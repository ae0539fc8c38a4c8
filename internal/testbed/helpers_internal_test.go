package testbed

import (
	"strings"
	"testing"
	"time"
)

func TestExecExitPattern(t *testing.T) {
	tests := []struct {
		msg  string
		want string
	}{
		{"crictl exec -s c sh -c exit 3: exit status 1: time=... level=fatal msg=\"execing command in container c synchronously: command 'sh -c exit 3' exited with 3:", "3"},
		{"command 'false' exited with 1: oops", "1"},
		{"rpc error: code = NotFound desc = container not found", ""},
	}
	for _, tc := range tests {
		got := ""
		if m := execExit.FindStringSubmatch(tc.msg); m != nil {
			got = m[1]
		}
		if got != tc.want {
			t.Errorf("exit code from %q = %q, want %q", tc.msg, got, tc.want)
		}
	}
}

// TestOptions: the options reach the bed's scripts, and one that is
// invalid fails newBed (harness's TestSetters checks every rule).
func TestOptions(t *testing.T) {
	if _, err := newBed(t, []Option{WithStartTimeout(0)}); err == nil || !strings.Contains(err.Error(), "must be positive") {
		t.Errorf("newBed with a zero start timeout = %v", err)
	}
	b, err := newBed(t, []Option{WithCacheDir("/c"), WithScriptsDir("/s"), WithStartTimeout(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if s := b.scripts; s.CacheDir != "/c" || s.Dir != "/s" || s.StartTimeout != time.Minute {
		t.Errorf("options not applied: %+v", s)
	}
}
