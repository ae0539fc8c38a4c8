package directexec

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// Classic BPF as seccomp uses it.
const (
	bpfLdAbsW      = 0x20 // BPF_LD | BPF_W | BPF_ABS
	bpfJa          = 0x05 // BPF_JMP | BPF_JA
	bpfJeqK        = 0x15 // BPF_JMP | BPF_JEQ | BPF_K
	bpfJgtK        = 0x25 // BPF_JMP | BPF_JGT | BPF_K
	bpfJsetK       = 0x45 // BPF_JMP | BPF_JSET | BPF_K
	bpfRetK        = 0x06 // BPF_RET | BPF_K
	bpfMaxInsns    = 4096 // BPF_MAXINSNS: the kernel's limit for a filter
	sockFilterSize = 8    // struct sock_filter

	seccompDataNr   = 0 // offsetof(struct seccomp_data, nr)
	seccompDataArch = 4 // offsetof(struct seccomp_data, arch)
	x32SyscallBit   = 1 << 30

	// libseccomp architecture tokens (AUDIT_ARCH_* except x32).
	archAMD64 uint32 = 0xc000003e
	archX32   uint32 = 0x4000003e
	archS390  uint32 = 0x00000016
	archS390X uint32 = 0x80000016
)

// auditArch is the AUDIT_ARCH_* value the kernel reports for a libseccomp
// architecture token: x32 calls come as x86_64 with bit 30 set in nr.
func auditArch(token uint32) uint32 {
	if token == archX32 {
		return archAMD64
	}
	return token
}

type bpfInsn struct {
	code   uint16
	jt, jf uint8
	k      uint32
	to     string // a BPF_JA's target label
}

// bpfAsm assembles a program whose unconditional jumps go to labels and
// whose conditional jumps only skip an instruction or three, so no offset
// ever overflows.
type bpfAsm struct {
	insns  []bpfInsn
	labels map[string]int
}

func (a *bpfAsm) op(code uint16, jt, jf uint8, k uint32) {
	a.insns = append(a.insns, bpfInsn{code: code, jt: jt, jf: jf, k: k})
}

func (a *bpfAsm) ja(label string) { a.insns = append(a.insns, bpfInsn{code: bpfJa, to: label}) }

func (a *bpfAsm) label(name string) { a.labels[name] = len(a.insns) }

func (a *bpfAsm) assemble() ([]byte, error) {
	out := make([]byte, 0, len(a.insns)*sockFilterSize)
	for pc, in := range a.insns {
		if in.to != "" {
			target, ok := a.labels[in.to]
			if !ok || target <= pc {
				return nil, fmt.Errorf("enosys stub: bad jump to %q", in.to)
			}
			in.k = uint32(target - pc - 1)
		}
		out = binary.NativeEndian.AppendUint16(out, in.code)
		out = append(out, in.jt, in.jf)
		out = binary.NativeEndian.AppendUint32(out, in.k)
	}
	return out, nil
}

// enosysStub is runc's patchbpf stub, rebuilt: a syscall whose number is
// above the largest one the profile names (for its architecture) gets
// -ENOSYS instead of the profile's default action, so that programs
// probing for syscalls newer than the profile fall back as on an older
// kernel. filterLen is the length of the filter that follows (the stub
// falls through to it).
func enosysStub(maxSyscalls map[uint32]int32, filterLen int) ([]byte, error) {
	byArch := map[uint32]map[uint32]int32{}
	for token, max := range maxSyscalls {
		if max <= 0 {
			continue // runc: no syscalls found for this arch
		}
		a := auditArch(token)
		if byArch[a] == nil {
			byArch[a] = map[uint32]int32{}
		}
		byArch[a][token] = max
	}
	archs := make([]uint32, 0, len(byArch))
	for a := range byArch {
		archs = append(archs, a)
	}
	slices.Sort(archs)

	a := &bpfAsm{labels: map[string]int{}}
	a.op(bpfLdAbsW, 0, 0, seccompDataArch)
	for _, arch := range archs {
		a.op(bpfJeqK, 0, 1, arch)
		a.ja(fmt.Sprintf("arch-%x", arch))
	}
	a.ja("filter")
	for _, arch := range archs {
		a.label(fmt.Sprintf("arch-%x", arch))
		a.op(bpfLdAbsW, 0, 0, seccompDataNr)
		if err := archChecks(a, arch, byArch[arch]); err != nil {
			return nil, err
		}
		a.ja("filter")
	}
	a.label("enosys")
	a.op(bpfRetK, 0, 0, actErrno|errnoENOSYS)
	a.label("filter")
	if len(a.insns)+filterLen > bpfMaxInsns {
		return nil, fmt.Errorf("enosys stub: %d instructions with the filter, more than %d", len(a.insns)+filterLen, bpfMaxInsns)
	}
	return a.assemble()
}

// archChecks sends syscall numbers above the largest known to -ENOSYS for
// one architecture; the syscall number is loaded.
func archChecks(a *bpfAsm, arch uint32, tokens map[uint32]int32) error {
	switch len(tokens) {
	case 1:
		for token, max := range tokens {
			if token == archS390 || token == archS390X {
				// Unknown syscalls arrive as setup(2), number 0.
				a.op(bpfJeqK, 0, 1, 0)
				a.ja("enosys")
			}
			switch token {
			case archAMD64: // x32 calls are not this section's
				a.op(bpfJsetK, 0, 1, x32SyscallBit)
				a.ja("filter")
			case archX32: // neither are x86_64 calls
				a.op(bpfJsetK, 1, 0, x32SyscallBit)
				a.ja("filter")
			}
			a.op(bpfJgtK, 0, 1, uint32(max))
			a.ja("enosys")
		}
		return nil
	case 2:
		amd64, ok1 := tokens[archAMD64]
		x32, ok2 := tokens[archX32]
		if arch != archAMD64 || !ok1 || !ok2 {
			return fmt.Errorf("enosys stub: architectures %v overlap on %#x", tokens, arch)
		}
		a.op(bpfJsetK, 3, 0, x32SyscallBit)
		a.op(bpfJgtK, 0, 1, uint32(amd64))
		a.ja("enosys")
		a.ja("filter")
		a.op(bpfJgtK, 0, 1, uint32(x32))
		a.ja("enosys")
		return nil
	}
	return fmt.Errorf("enosys stub: %d architectures overlap on %#x", len(tokens), arch)
}
