package directexec

import (
	"encoding/binary"
	"fmt"
	"slices"

	"golang.org/x/net/bpf"
)

// Classic BPF as seccomp uses it.
const (
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

// bpfAsm collects a program for golang.org/x/net/bpf to assemble. Its
// unconditional jumps go to labels, resolved here; its conditional jumps
// only skip an instruction or three, so no offset ever overflows.
type bpfAsm struct {
	insns  []bpf.Instruction
	jumps  map[int]string // the label each unconditional jump goes to, by index
	labels map[string]int
}

func newBPFAsm() *bpfAsm { return &bpfAsm{jumps: map[int]string{}, labels: map[string]int{}} }

func (a *bpfAsm) add(in bpf.Instruction) { a.insns = append(a.insns, in) }

// jumpIf adds a conditional jump on the loaded word.
func (a *bpfAsm) jumpIf(cond bpf.JumpTest, val uint32, skipTrue, skipFalse uint8) {
	a.add(bpf.JumpIf{Cond: cond, Val: val, SkipTrue: skipTrue, SkipFalse: skipFalse})
}

func (a *bpfAsm) ja(label string) {
	a.jumps[len(a.insns)] = label
	a.add(bpf.Jump{})
}

func (a *bpfAsm) label(name string) { a.labels[name] = len(a.insns) }

// assemble resolves the labels and returns struct sock_filter[], native
// endian as seccomp(2) reads it.
func (a *bpfAsm) assemble() ([]byte, error) {
	for pc, to := range a.jumps {
		target, ok := a.labels[to]
		if !ok || target <= pc {
			return nil, fmt.Errorf("enosys stub: bad jump to %q", to)
		}
		a.insns[pc] = bpf.Jump{Skip: uint32(target - pc - 1)}
	}
	raw, err := bpf.Assemble(a.insns)
	if err != nil {
		return nil, fmt.Errorf("enosys stub: %w", err)
	}
	out := make([]byte, 0, len(raw)*sockFilterSize)
	for _, in := range raw {
		out = binary.NativeEndian.AppendUint16(out, in.Op)
		out = append(out, in.Jt, in.Jf)
		out = binary.NativeEndian.AppendUint32(out, in.K)
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

	a := newBPFAsm()
	a.add(bpf.LoadAbsolute{Off: seccompDataArch, Size: 4})
	for _, arch := range archs {
		a.jumpIf(bpf.JumpEqual, arch, 0, 1)
		a.ja(fmt.Sprintf("arch-%x", arch))
	}
	a.ja("filter")
	for _, arch := range archs {
		a.label(fmt.Sprintf("arch-%x", arch))
		a.add(bpf.LoadAbsolute{Off: seccompDataNr, Size: 4})
		if err := archChecks(a, arch, byArch[arch]); err != nil {
			return nil, err
		}
		a.ja("filter")
	}
	a.label("enosys")
	a.add(bpf.RetConstant{Val: actErrno | errnoENOSYS})
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
				a.jumpIf(bpf.JumpEqual, 0, 0, 1)
				a.ja("enosys")
			}
			switch token {
			case archAMD64: // x32 calls are not this section's
				a.jumpIf(bpf.JumpBitsSet, x32SyscallBit, 0, 1)
				a.ja("filter")
			case archX32: // neither are x86_64 calls
				a.jumpIf(bpf.JumpBitsSet, x32SyscallBit, 1, 0)
				a.ja("filter")
			}
			a.jumpIf(bpf.JumpGreaterThan, uint32(max), 0, 1)
			a.ja("enosys")
		}
		return nil
	case 2:
		amd64, ok1 := tokens[archAMD64]
		x32, ok2 := tokens[archX32]
		if arch != archAMD64 || !ok1 || !ok2 {
			return fmt.Errorf("enosys stub: architectures %v overlap on %#x", tokens, arch)
		}
		a.jumpIf(bpf.JumpBitsSet, x32SyscallBit, 3, 0)
		a.jumpIf(bpf.JumpGreaterThan, uint32(amd64), 0, 1)
		a.ja("enosys")
		a.ja("filter")
		a.jumpIf(bpf.JumpGreaterThan, uint32(x32), 0, 1)
		a.ja("enosys")
		return nil
	}
	return fmt.Errorf("enosys stub: %d architectures overlap on %#x", len(tokens), arch)
}
