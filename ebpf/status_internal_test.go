package ebpf

import (
	"errors"
	"fmt"
	"testing"

	cebpf "github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

func TestLoadCause(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		// The verifier's refusal wraps EACCES: it is a kernel to look
		// into, not a missing privilege.
		{fmt.Errorf("tracker: verifier rejected tracker.c: %w", &cebpf.VerifierError{Cause: unix.EACCES, Log: []string{"R1 type=untrusted_ptr_"}}), "verifier"},
		{fmt.Errorf("tracker: load: %w", unix.EPERM), "permission"},
		{fmt.Errorf("tracker: load: %w", unix.EACCES), "permission"},
		{fmt.Errorf("tracker: %w", cebpf.ErrNotSupported), "unsupported"},
		{errors.New("tracker: open ring buffer: out of memory"), "error"},
	} {
		if got := loadCause(tc.err); got != tc.want {
			t.Errorf("loadCause(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestStatusFellBack(t *testing.T) {
	for _, tc := range []struct {
		st   Status
		want bool
	}{
		{Status{Requested: ModeAuto, Mode: ModeDial}, true},
		{Status{Requested: ModeAuto, Mode: ModeEBPF}, false},
		{Status{Requested: ModeDial, Mode: ModeDial}, false},
		{Status{Requested: ModeEBPF, Mode: ModeEBPF}, false},
	} {
		if got := tc.st.FellBack(); got != tc.want {
			t.Errorf("%+v.FellBack() = %v, want %v", tc.st, got, tc.want)
		}
	}
}
