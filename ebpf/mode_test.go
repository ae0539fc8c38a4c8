package ebpf_test

import (
	"testing"

	"github.com/probelet/probelet/ebpf"
)

func TestParseMode(t *testing.T) {
	tests := []struct {
		in      string
		want    ebpf.Mode
		wantErr bool
	}{
		{"auto", ebpf.ModeAuto, false},
		{"ebpf", ebpf.ModeEBPF, false},
		{"dial", ebpf.ModeDial, false},
		{"", "", true},
		{"EBPF", "", true},
		{"bpf", "", true},
	}
	for _, tc := range tests {
		got, err := ebpf.ParseMode(tc.in)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("ParseMode(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}
