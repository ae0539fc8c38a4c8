package ebpf

import "fmt"

// Mode selects how TCP probes are answered (the --tcp-mode flag).
type Mode string

const (
	// ModeAuto uses the eBPF short-circuit when it loads and dials
	// otherwise, saying once in the log why.
	ModeAuto Mode = "auto"
	// ModeEBPF requires the short-circuit: NewTCPProber fails without it.
	ModeEBPF Mode = "ebpf"
	// ModeDial always dials, like the kubelet.
	ModeDial Mode = "dial"
)

// ParseMode parses a --tcp-mode value.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeAuto, ModeEBPF, ModeDial:
		return m, nil
	}
	return "", fmt.Errorf("invalid TCP probe mode %q: want auto, ebpf or dial", s)
}
