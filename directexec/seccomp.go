package directexec

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os/exec"
	"slices"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// The libseccomp actions (scmp_action values, the kernel's SECCOMP_RET_*).
const (
	actKillThread  uint32 = 0x00000000
	actKillProcess uint32 = 0x80000000
	actTrap        uint32 = 0x00030000
	actErrno       uint32 = 0x00050000
	actTrace       uint32 = 0x7ff00000
	actLog         uint32 = 0x7ffc0000
	actAllow       uint32 = 0x7fff0000
	errnoEPERM            = 1
	errnoENOSYS           = 38
)

// The libseccomp comparison operators (enum scmp_compare).
var seccompOps = map[specs.LinuxSeccompOperator]uint32{
	"SCMP_CMP_NE": 1, "SCMP_CMP_LT": 2, "SCMP_CMP_LE": 3, "SCMP_CMP_EQ": 4,
	"SCMP_CMP_GE": 5, "SCMP_CMP_GT": 6, "SCMP_CMP_MASKED_EQ": 7,
}

// seccompArchs maps OCI architectures to libseccomp's names for them.
var seccompArchs = map[specs.Arch]string{
	"SCMP_ARCH_X86": "x86", "SCMP_ARCH_X86_64": "x86_64", "SCMP_ARCH_X32": "x32",
	"SCMP_ARCH_ARM": "arm", "SCMP_ARCH_AARCH64": "aarch64",
	"SCMP_ARCH_MIPS": "mips", "SCMP_ARCH_MIPS64": "mips64", "SCMP_ARCH_MIPS64N32": "mips64n32",
	"SCMP_ARCH_MIPSEL": "mipsel", "SCMP_ARCH_MIPSEL64": "mipsel64", "SCMP_ARCH_MIPSEL64N32": "mipsel64n32",
	"SCMP_ARCH_PPC": "ppc", "SCMP_ARCH_PPC64": "ppc64", "SCMP_ARCH_PPC64LE": "ppc64le",
	"SCMP_ARCH_S390": "s390", "SCMP_ARCH_S390X": "s390x", "SCMP_ARCH_RISCV64": "riscv64",
	"SCMP_ARCH_LOONGARCH64": "loongarch64",
}

// seccompAction is runc's getAction: the libseccomp action for an OCI one,
// errno defaulting to EPERM. Notify needs a seccomp agent: not supported.
func seccompAction(name specs.LinuxSeccompAction, errnoRet *uint) (uint32, error) {
	code := uint32(errnoEPERM)
	if errnoRet != nil {
		code = uint32(uint16(*errnoRet)) // runc: SetReturnCode(int16(...))
	}
	switch name {
	case "SCMP_ACT_KILL", "SCMP_ACT_KILL_THREAD":
		return actKillThread, nil
	case "SCMP_ACT_KILL_PROCESS":
		return actKillProcess, nil
	case "SCMP_ACT_TRAP":
		return actTrap, nil
	case "SCMP_ACT_ERRNO":
		return actErrno | code, nil
	case "SCMP_ACT_TRACE":
		return actTrace | code, nil
	case "SCMP_ACT_LOG":
		return actLog, nil
	case "SCMP_ACT_ALLOW":
		return actAllow, nil
	}
	return 0, fmt.Errorf("seccomp action %q", name)
}

// seccompProgram is a compiled filter: the BPF program and the flags
// seccomp(2) loads it with.
type seccompProgram struct {
	flags uint32
	prog  []byte // struct sock_filter, native endian
}

// compileSeccomp builds the container's filter as runc does: libseccomp
// (through the helper) compiles the profile with runc's rules
// (libcontainer/specconv.SetupSeccomp, seccomp.InitSeccomp), then the
// -ENOSYS stub of runc's patchbpf goes in front. nil, nil: no seccomp.
func compileSeccomp(ctx context.Context, helper string, s *specs.LinuxSeccomp) (*seccompProgram, error) {
	desc, stub, err := seccompDescription(s)
	if err != nil || desc == nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, helper, "compile")
	cmd.Stdin = bytes.NewReader(desc)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, unsupportedf(reasonSeccomp, "compiling the profile: %v: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	out, err := parseCompiled(stdout.Bytes())
	if err != nil {
		return nil, unsupportedf(reasonSeccomp, "compiling the profile: %v", err)
	}
	prog := out.filter
	if stub {
		patch, err := enosysStub(out.maxSyscalls, len(out.filter)/sockFilterSize)
		if err != nil {
			return nil, unsupportedf(reasonSeccomp, "%v", err)
		}
		prog = append(patch, out.filter...)
	}
	if n := len(prog) / sockFilterSize; n > bpfMaxInsns {
		return nil, unsupportedf(reasonSeccomp, "the filter has %d instructions, more than the kernel's %d", n, bpfMaxInsns)
	}
	return &seccompProgram{flags: out.flags, prog: prog}, nil
}

// seccompDescription turns an OCI profile into the helper's compile
// records, rule for rule as runc adds them; stub says whether runc would
// prepend its -ENOSYS stub.
func seccompDescription(s *specs.LinuxSeccomp) (desc []byte, stub bool, err error) {
	if s == nil || (s.DefaultAction == "" && len(s.Syscalls) == 0) {
		return nil, false, nil // runc: seccomp off
	}
	if s.ListenerPath != "" {
		return nil, false, unsupportedf(reasonSeccomp, "a seccomp listener (notify) at %s", s.ListenerPath)
	}
	def, err := seccompAction(s.DefaultAction, s.DefaultErrnoRet)
	if err != nil {
		return nil, false, unsupportedf(reasonSeccomp, "default %v", err)
	}
	var w records
	w.u32('d', def)
	for _, a := range s.Architectures {
		name, ok := seccompArchs[a]
		if !ok {
			return nil, false, unsupportedf(reasonSeccomp, "architecture %q", a)
		}
		w.str('a', name)
	}
	if s.Flags != nil {
		w.add('F', nil)
		for _, f := range s.Flags {
			w.str('f', string(f))
		}
	}
	names := 0
	for _, call := range s.Syscalls {
		names += len(call.Names)
	}
	if names > 32 {
		w.add('o', nil) // runc enables libseccomp's binary tree
	}
	for _, call := range s.Syscalls {
		act, err := seccompAction(call.Action, call.ErrnoRet)
		if err != nil {
			return nil, false, unsupportedf(reasonSeccomp, "%v", err)
		}
		rules, err := seccompRules(call.Args)
		if err != nil {
			return nil, false, unsupportedf(reasonSeccomp, "syscalls %v: %v", call.Names, err)
		}
		for _, name := range call.Names {
			if name == "" {
				return nil, false, unsupportedf(reasonSeccomp, "an empty syscall name")
			}
			w.str('n', name)
			if act == def {
				continue // runc skips rules that repeat the default
			}
			for _, conds := range rules {
				w.add('r', ruleRecord(act, conds, name))
			}
		}
	}
	w.add('Z', nil)
	// runc's patchbpf: no stub when the default lets calls through.
	allow := s.DefaultAction == "SCMP_ACT_ALLOW" || s.DefaultAction == "SCMP_ACT_LOG" || s.DefaultAction == "SCMP_ACT_TRACE"
	return w.bytes(), !allow, nil
}

type seccompCond struct {
	arg, op uint32
	a, b    uint64
}

// seccompRules groups a syscall's conditions into rules as runc's
// matchCall does: all in one rule, or one rule per condition when two
// conditions test the same argument (libseccomp refuses that in one rule).
func seccompRules(args []specs.LinuxSeccompArg) ([][]seccompCond, error) {
	if len(args) == 0 {
		return [][]seccompCond{nil}, nil
	}
	conds := make([]seccompCond, 0, len(args))
	var perArg [6]int
	shared := false
	for _, a := range args {
		op, ok := seccompOps[a.Op]
		if !ok {
			return nil, fmt.Errorf("operator %q", a.Op)
		}
		if a.Index > 5 {
			return nil, fmt.Errorf("argument index %d", a.Index)
		}
		perArg[a.Index]++
		shared = shared || perArg[a.Index] > 1
		conds = append(conds, seccompCond{arg: uint32(a.Index), op: op, a: a.Value, b: a.ValueTwo})
	}
	if !shared {
		return [][]seccompCond{conds}, nil
	}
	rules := make([][]seccompCond, len(conds))
	for i, c := range conds {
		rules[i] = []seccompCond{c}
	}
	return rules, nil
}

func ruleRecord(act uint32, conds []seccompCond, name string) []byte {
	b := binary.LittleEndian.AppendUint32(nil, act)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(conds)))
	for _, c := range conds {
		b = binary.LittleEndian.AppendUint32(b, c.arg)
		b = binary.LittleEndian.AppendUint32(b, c.op)
		b = binary.LittleEndian.AppendUint64(b, c.a)
		b = binary.LittleEndian.AppendUint64(b, c.b)
	}
	return append(b, name...)
}

// compiled is what the helper's compile mode printed.
type compiled struct {
	flags       uint32
	maxSyscalls map[uint32]int32 // libseccomp arch token → largest syscall number named
	filter      []byte
}

func parseCompiled(out []byte) (*compiled, error) {
	c := &compiled{maxSyscalls: map[uint32]int32{}}
	err := readRecords(out, func(tag byte, p []byte) error {
		switch {
		case tag == 'f' && len(p) == 4:
			c.flags = binary.LittleEndian.Uint32(p)
		case tag == 'm' && len(p) == 8:
			c.maxSyscalls[binary.LittleEndian.Uint32(p)] = int32(binary.LittleEndian.Uint32(p[4:]))
		case tag == 'b' && len(p) > 0 && len(p)%sockFilterSize == 0:
			c.filter = slices.Clone(p)
		default:
			return fmt.Errorf("unexpected record %q of %d bytes", tag, len(p))
		}
		return nil
	})
	if err == nil && c.filter == nil {
		err = errors.New("no filter in the output")
	}
	return c, err
}
