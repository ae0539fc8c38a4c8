package directexec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"testing"

	"golang.org/x/net/bpf"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// description decodes seccompDescription's records for the test.
type description struct {
	def      uint32
	archs    []string
	flags    []string
	explicit bool
	optimize bool
	names    []string
	rules    []string // "action name conds"
}

func describe(t *testing.T, b []byte) description {
	t.Helper()
	var d description
	err := readRecords(b, func(tag byte, p []byte) error {
		switch tag {
		case 'd':
			d.def = binary.LittleEndian.Uint32(p)
		case 'a':
			d.archs = append(d.archs, string(p))
		case 'F':
			d.explicit = true
		case 'f':
			d.flags = append(d.flags, string(p))
		case 'o':
			d.optimize = true
		case 'n':
			d.names = append(d.names, string(p))
		case 'r':
			act, n := binary.LittleEndian.Uint32(p), binary.LittleEndian.Uint32(p[4:])
			conds := ""
			for i := range n {
				c := p[8+24*i:]
				conds += fmt.Sprintf("[%d %d %d %d]", binary.LittleEndian.Uint32(c), binary.LittleEndian.Uint32(c[4:]),
					binary.LittleEndian.Uint64(c[8:]), binary.LittleEndian.Uint64(c[16:]))
			}
			d.rules = append(d.rules, fmt.Sprintf("%#x %s %s", act, p[8+24*n:], conds))
		default:
			return fmt.Errorf("record %q", tag)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func uintp(v uint) *uint { return &v }

func TestSeccompDescriptionFollowsRunc(t *testing.T) {
	s := &specs.LinuxSeccomp{
		DefaultAction: "SCMP_ACT_ERRNO",
		Architectures: []specs.Arch{"SCMP_ARCH_X86_64", "SCMP_ARCH_X32"},
		Syscalls: []specs.LinuxSyscall{
			{Names: []string{"read", "write"}, Action: "SCMP_ACT_ALLOW"},
			{Names: []string{"mkdir"}, Action: "SCMP_ACT_ERRNO"},                       // the default: no rule
			{Names: []string{"clone3"}, Action: "SCMP_ACT_ERRNO", ErrnoRet: uintp(38)}, // not the default
			{Names: []string{"personality"}, Action: "SCMP_ACT_ALLOW", Args: []specs.LinuxSeccompArg{
				{Index: 0, Value: 8, Op: "SCMP_CMP_EQ"}, {Index: 1, Value: 1, ValueTwo: 2, Op: "SCMP_CMP_MASKED_EQ"}}},
			{Names: []string{"socket"}, Action: "SCMP_ACT_ALLOW", Args: []specs.LinuxSeccompArg{
				{Index: 0, Value: 38, Op: "SCMP_CMP_LT"}, {Index: 0, Value: 40, Op: "SCMP_CMP_GT"}}},
			{Names: []string{"kill"}, Action: "SCMP_ACT_KILL_PROCESS"},
			{Names: []string{"ptrace"}, Action: "SCMP_ACT_TRACE"},
			{Names: []string{"uname"}, Action: "SCMP_ACT_LOG"},
		},
	}
	b, stub, err := seccompDescription(s)
	if err != nil {
		t.Fatal(err)
	}
	d := describe(t, b)
	if d.def != actErrno|errnoEPERM || !slices.Equal(d.archs, []string{"x86_64", "x32"}) || d.explicit || d.optimize || !stub {
		t.Errorf("description %+v, stub %v", d, stub)
	}
	if want := []string{"read", "write", "mkdir", "clone3", "personality", "socket", "kill", "ptrace", "uname"}; !slices.Equal(d.names, want) {
		t.Errorf("names %q, want every name the profile has, %q", d.names, want)
	}
	want := []string{
		"0x7fff0000 read ", "0x7fff0000 write ",
		"0x50026 clone3 ",
		"0x7fff0000 personality [0 4 8 0][1 7 1 2]",                    // different arguments: one rule
		"0x7fff0000 socket [0 2 38 0]", "0x7fff0000 socket [0 6 40 0]", // the same argument: a rule each
		"0x80000000 kill ", "0x7ff00001 ptrace ", "0x7ffc0000 uname ",
	}
	if !slices.Equal(d.rules, want) {
		t.Errorf("rules\n%q\nwant\n%q", d.rules, want)
	}

	s.Flags = []specs.LinuxSeccompFlag{}
	s.DefaultAction = "SCMP_ACT_ALLOW"
	for i := range 40 {
		s.Syscalls = append(s.Syscalls, specs.LinuxSyscall{Names: []string{fmt.Sprint("call", i)}, Action: "SCMP_ACT_ERRNO"})
	}
	b, stub, err = seccompDescription(s)
	if d = describe(t, b); err != nil || !d.explicit || len(d.flags) != 0 || !d.optimize || stub {
		t.Errorf("an allowing profile with 49 names and no flags: %+v, stub %v, %v; want flags explicitly empty, optimized, no stub", d, stub, err)
	}
}

func TestSeccompDescriptionRefusals(t *testing.T) {
	allow := []specs.LinuxSyscall{{Names: []string{"read"}, Action: "SCMP_ACT_ALLOW"}}
	tests := []struct {
		name string
		s    specs.LinuxSeccomp
	}{
		{"a notify action", specs.LinuxSeccomp{DefaultAction: "SCMP_ACT_ERRNO", Syscalls: []specs.LinuxSyscall{{Names: []string{"mount"}, Action: "SCMP_ACT_NOTIFY"}}}},
		{"a listener", specs.LinuxSeccomp{DefaultAction: "SCMP_ACT_ERRNO", ListenerPath: "/run/agent.sock", Syscalls: allow}},
		{"an unknown default action", specs.LinuxSeccomp{DefaultAction: "SCMP_ACT_PANIC", Syscalls: allow}},
		{"an unknown architecture", specs.LinuxSeccomp{DefaultAction: "SCMP_ACT_ERRNO", Architectures: []specs.Arch{"SCMP_ARCH_VAX"}, Syscalls: allow}},
		{"an unknown operator", specs.LinuxSeccomp{DefaultAction: "SCMP_ACT_ERRNO", Syscalls: []specs.LinuxSyscall{
			{Names: []string{"read"}, Action: "SCMP_ACT_ALLOW", Args: []specs.LinuxSeccompArg{{Index: 0, Op: "SCMP_CMP_LIKE"}}}}}},
		{"a seventh argument", specs.LinuxSeccomp{DefaultAction: "SCMP_ACT_ERRNO", Syscalls: []specs.LinuxSyscall{
			{Names: []string{"read"}, Action: "SCMP_ACT_ALLOW", Args: []specs.LinuxSeccompArg{{Index: 6, Op: "SCMP_CMP_EQ"}}}}}},
		{"an empty name", specs.LinuxSeccomp{DefaultAction: "SCMP_ACT_ERRNO", Syscalls: []specs.LinuxSyscall{{Names: []string{""}, Action: "SCMP_ACT_ALLOW"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := seccompDescription(&tt.s)
			var u *unsupported
			if !errors.As(err, &u) || u.reason != reasonSeccomp {
				t.Fatalf("seccompDescription = %v, want a seccomp fallback", err)
			}
		})
	}
	if b, _, err := seccompDescription(&specs.LinuxSeccomp{}); b != nil || err != nil {
		t.Errorf("an empty profile: %v, %v; want no seccomp, as runc", b, err)
	}
}

// seccompData is struct seccomp_data as the x/net/bpf VM reads it: it
// loads words big-endian, so each 32-bit field is stored that way.
func seccompData(nr, arch uint32, args ...uint64) []byte {
	b := make([]byte, 64)
	binary.BigEndian.PutUint32(b[0:], nr)
	binary.BigEndian.PutUint32(b[4:], arch)
	for i, a := range args {
		binary.BigEndian.PutUint32(b[16+8*i:], uint32(a))     // low word first (little-endian host)
		binary.BigEndian.PutUint32(b[20+8*i:], uint32(a>>32)) // then the high one
	}
	return b
}

// runFilter runs a native-endian sock_filter program on data.
func runFilter(t *testing.T, prog []byte, data []byte) uint32 {
	t.Helper()
	raw := make([]bpf.RawInstruction, 0, len(prog)/sockFilterSize)
	for i := 0; i < len(prog); i += sockFilterSize {
		raw = append(raw, bpf.RawInstruction{
			Op: binary.NativeEndian.Uint16(prog[i:]), Jt: prog[i+2], Jf: prog[i+3], K: binary.NativeEndian.Uint32(prog[i+4:]),
		})
	}
	insns, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatalf("cannot disassemble %v", raw)
	}
	vm, err := bpf.NewVM(insns)
	if err != nil {
		t.Fatal(err)
	}
	v, err := vm.Run(data)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(v)
}

const (
	archI386   = 0x40000003
	reachedSet = 0x7fff1234 // the stand-in filter's answer
	enosys     = actErrno | errnoENOSYS
)

func TestEnosysStub(t *testing.T) {
	stubFor := func(max map[uint32]int32) []byte {
		// A stand-in for libseccomp's filter: one instruction answering reachedSet.
		ret, _ := bpf.RetConstant{Val: reachedSet}.Assemble()
		sentinel := binary.NativeEndian.AppendUint16(nil, ret.Op)
		sentinel = binary.NativeEndian.AppendUint32(append(sentinel, 0, 0), reachedSet)
		stub, err := enosysStub(max, 1)
		if err != nil {
			t.Fatal(err)
		}
		return append(stub, sentinel...)
	}
	tests := []struct {
		name string
		max  map[uint32]int32
		nr   uint32
		arch uint32
		want uint32
	}{
		{"amd64 known", map[uint32]int32{archAMD64: 435}, 435, archAMD64, reachedSet},
		{"amd64 newer than the profile", map[uint32]int32{archAMD64: 435}, 436, archAMD64, enosys},
		{"amd64 only: x32 calls go to the filter", map[uint32]int32{archAMD64: 435}, x32SyscallBit | 500, archAMD64, reachedSet},
		{"x32 only: amd64 calls go to the filter", map[uint32]int32{archX32: x32SyscallBit | 400}, 500, archAMD64, reachedSet},
		{"x32 only: a newer x32 call", map[uint32]int32{archX32: x32SyscallBit | 400}, x32SyscallBit | 401, archAMD64, enosys},
		{"both: amd64 known", map[uint32]int32{archAMD64: 435, archX32: x32SyscallBit | 400}, 435, archAMD64, reachedSet},
		{"both: amd64 newer", map[uint32]int32{archAMD64: 435, archX32: x32SyscallBit | 400}, 436, archAMD64, enosys},
		{"both: x32 known", map[uint32]int32{archAMD64: 435, archX32: x32SyscallBit | 400}, x32SyscallBit | 400, archAMD64, reachedSet},
		{"both: x32 newer", map[uint32]int32{archAMD64: 435, archX32: x32SyscallBit | 400}, x32SyscallBit | 401, archAMD64, enosys},
		{"i386 beside amd64", map[uint32]int32{archAMD64: 435, archI386: 440}, 441, archI386, enosys},
		{"i386 known", map[uint32]int32{archAMD64: 435, archI386: 440}, 436, archI386, reachedSet},
		{"an architecture the profile lacks", map[uint32]int32{archAMD64: 435}, 9999, 0xdead, reachedSet},
		{"an architecture without known syscalls", map[uint32]int32{archAMD64: 435, archI386: 0}, 9999, archI386, reachedSet},
		{"s390x: setup(2) carries unknown calls", map[uint32]int32{archS390X: 400}, 0, archS390X, enosys},
		{"s390x known", map[uint32]int32{archS390X: 400}, 1, archS390X, reachedSet},
		{"no syscalls at all", map[uint32]int32{}, 9999, archAMD64, reachedSet},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := runFilter(t, stubFor(tt.max), seccompData(tt.nr, tt.arch)); got != tt.want {
				t.Fatalf("nr %#x arch %#x → %#x, want %#x", tt.nr, tt.arch, got, tt.want)
			}
		})
	}
	if _, err := enosysStub(map[uint32]int32{archAMD64: 1, archX32: 1, 0x1234: 1}, 1); err != nil {
		t.Errorf("distinct architectures refused: %v", err)
	}
	if _, err := enosysStub(map[uint32]int32{archAMD64: 1}, bpfMaxInsns); err == nil {
		t.Error("a stub that overflows the kernel's limit was accepted")
	}
}
