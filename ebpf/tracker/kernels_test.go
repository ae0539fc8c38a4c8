package tracker

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// MinKernel is the oldest Linux the committed objects load on (with BTF).
// Kernels older than the test VM's (hack/vm) are covered by this check only.
const minKernel = "5.10"

// since is the first Linux release that has a feature, and where that is
// recorded. gate names the have_* constant of tracker.c that keeps a newer
// feature away from kernels without it.
type since struct {
	version string
	source  string
	gate    string
}

// Sources: bcc = iovisor/bcc docs/kernel-versions.md; depsurf = DepSurf's
// per-release kernel function lists; the hashes are the kernel commits.
var (
	helperSince = map[asm.BuiltinFunc]since{
		asm.FnMapLookupElem:     {"3.19", "d0003ec01c66 (bcc)", ""},
		asm.FnMapUpdateElem:     {"3.19", "d0003ec01c66 (bcc)", ""},
		asm.FnMapDeleteElem:     {"3.19", "d0003ec01c66 (bcc)", ""},
		asm.FnGetCurrentPidTgid: {"4.2", "ffeedafbf023 (bcc)", ""},
		asm.FnProbeReadKernel:   {"5.5", "6ae08ae3dea2 (bcc); every CO-RE read", ""},
		asm.FnRingbufReserve:    {"5.8", "457f44363a88 (bcc)", ""},
		asm.FnRingbufSubmit:     {"5.8", "457f44363a88 (bcc)", ""},
		asm.FnSockFromFile:      {"5.11", "4f19cab76136 (bcc; depsurf: absent 5.8, present 5.11)", "have_sock_from_file"},
		// bpf_get_socket_cookie exists since 4.12 for socket programs;
		// tracing programs may call it since c5dbb89fc2ac, in 5.12. The
		// snapshot's call is also behind have_snapshot_cookie, which no
		// release decides (features.go, SnapshotCookie).
		asm.FnGetSocketCookie: {"5.12", "c5dbb89fc2ac, for tracing programs (depsurf: bpf_get_socket_ptr_cookie absent 5.11, present 5.13)", "have_tracing_cookie"},
	}
	// kfuncSince is empty: kfuncs need BTF-typed kernel functions and most
	// arrived after 6.0 (bpf_rdonly_cast: 6.2). Add one only behind a gate.
	kfuncSince = map[string]since{}
	mapSince   = map[ebpf.MapType]since{
		ebpf.Hash:    {"3.19", "0f8e4bd8a1fc (bcc)", ""},
		ebpf.Array:   {"3.19", "28fbcfa08d8e (bcc)", ""},
		ebpf.LRUHash: {"4.10", "29ba732acbee (bcc)", ""},
		ebpf.RingBuf: {"5.8", "457f44363a88 (bcc)", ""},
	}
	programSince = map[programKey]since{
		{ebpf.Tracing, ebpf.AttachTraceRawTp, ""}:         {"5.5", "tp_btf: f1b9509c2fb0 (bcc: BPF_PROG_TYPE_TRACING)", ""},
		{ebpf.Tracing, ebpf.AttachTraceIter, "task_file"}: {"5.8", "iterators 180139dca8b3 (bcc); task_file came with them", ""},
		{ebpf.TracePoint, ebpf.AttachNone, ""}:            {"4.7", "98b5c2c65c29 (bcc)", ""},
		// The raw_tp program only runs through BPF_PROG_TEST_RUN (Sync).
		{ebpf.RawTracepoint, ebpf.AttachNone, ""}: {"5.10", "raw_tp 4.17 (c4f6699dfcb8, bcc); BPF_PROG_TEST_RUN for raw_tp 5.10 (1b4d60ec162f; depsurf: bpf_prog_test_run_raw_tp absent 5.8, present 5.11)", ""},
	}
	// insnSince covers instruction-level features, by name (see insnFeatures).
	insnSince = map[string]since{
		"jmp32 (clang -mcpu=v3)":                    {"5.1", "BPF_JMP32 class", ""},
		"global data in a frozen read-only map":     {"5.2", "direct map value loads; read-only map contents as verifier constants (the have_* gates)", ""},
		"atomic add without fetch":                  {"3.18", "BPF_XADD; the fetch forms need 5.12", ""},
		"bpf-to-bpf calls":                          {"4.16", "cc8b0b92a169 (bcc)", ""},
		"bounded loops (backward jumps)":            {"5.3", "2589726d12a1 (bcc)", ""},
		"kernel BTF for CO-RE and tp_btf (vmlinux)": {"5.4", "/sys/kernel/btf/vmlinux (CONFIG_DEBUG_INFO_BTF)", ""},
	}
)

// programKey is how a program is loaded and attached. attachTo is kept for
// iterators only: a tracepoint's name does not change its kernel version.
type programKey struct {
	typ      ebpf.ProgramType
	attach   ebpf.AttachType
	attachTo string
}

// use is one feature an object uses, with where.
type use struct {
	kind, name string
	since      since
	known      bool
	where      []string
}

// TestObjectsLoadOnMinKernel walks the committed objects (amd64 and arm64):
// every helper, kfunc, map type, program and attach type and instruction
// feature they use must be in the tables above with its first kernel, at
// most minKernel unless a have_* gate keeps it from older kernels (the
// verifier-log test checks the gates drop it). A new helper without an
// entry fails here: look up its first kernel and add it.
func TestObjectsLoadOnMinKernel(t *testing.T) {
	for _, obj := range []string{"tracker_x86_bpfel.o", "tracker_arm64_bpfel.o"} {
		t.Run(obj, func(t *testing.T) {
			spec, err := ebpf.LoadCollectionSpec(filepath.Join(".", obj))
			if err != nil {
				t.Fatal(err)
			}
			uses := objectUses(spec)
			for _, u := range uses {
				checkUse(t, spec, u)
			}
			t.Logf("features of %s → first Linux release (minimum %s):\n%s", obj, minKernel, table(uses))
		})
	}
}

func checkUse(t *testing.T, spec *ebpf.CollectionSpec, u use) {
	t.Helper()
	switch {
	case !u.known:
		t.Errorf("%s %s (in %s) has no first-kernel entry: find the release that added it and add it to %sSince",
			u.kind, u.name, strings.Join(u.where, ", "), u.kind)
	case u.since.gate != "":
		v := spec.Variables[u.since.gate]
		if v == nil || !v.Constant() {
			t.Errorf("%s %s needs Linux %s and is gated by %s, which is not a read-only global of the object", u.kind, u.name, u.since.version, u.since.gate)
		}
	case newer(u.since.version, minKernel):
		t.Errorf("%s %s (in %s) needs Linux %s, newer than %s: gate it behind a have_* constant probed at load, or raise the minimum",
			u.kind, u.name, strings.Join(u.where, ", "), u.since.version, minKernel)
	}
}

// objectUses lists what spec uses, sorted by kind and name.
func objectUses(spec *ebpf.CollectionSpec) []use {
	found := map[[2]string]*use{}
	add := func(kind, name, where string, s since, known bool) {
		k := [2]string{kind, name}
		if found[k] == nil {
			found[k] = &use{kind: kind, name: name, since: s, known: known}
		}
		if !slices.Contains(found[k].where, where) {
			found[k].where = append(found[k].where, where)
		}
	}
	for name, m := range spec.Maps {
		s, ok := mapSince[m.Type]
		add("map", m.Type.String(), name, s, ok)
	}
	add("insn", "kernel BTF for CO-RE and tp_btf (vmlinux)", "all", insnSince["kernel BTF for CO-RE and tp_btf (vmlinux)"], true)
	for name, p := range spec.Programs {
		key := programKey{p.Type, p.AttachType, ""}
		if p.AttachType == ebpf.AttachTraceIter {
			key.attachTo = p.AttachTo
		}
		s, ok := programSince[key]
		add("program", fmt.Sprintf("%s/%s %s", p.Type, p.AttachType, key.attachTo), name, s, ok)
		for i := range p.Instructions {
			ins := &p.Instructions[i]
			switch {
			case ins.IsBuiltinCall():
				fn := asm.BuiltinFunc(ins.Constant)
				s, ok := helperSince[fn]
				add("helper", fn.String(), name, s, ok)
			case ins.IsKfuncCall():
				kf := ins.Reference() // the extern __ksym it calls
				if f := btf.FuncMetadata(ins); kf == "" && f != nil {
					kf = f.Name
				}
				s, ok := kfuncSince[kf]
				add("kfunc", kf, name, s, ok)
			}
			for _, f := range insnFeatures(ins) {
				s, ok := insnSince[f]
				add("insn", f, name, s, ok)
			}
		}
	}
	out := make([]use, 0, len(found))
	for _, u := range found {
		out = append(out, *u)
	}
	slices.SortFunc(out, func(a, b use) int {
		return strings.Compare(a.kind+"\x00"+a.name, b.kind+"\x00"+b.name)
	})
	return out
}

// insnFeatures names the instruction-level features ins needs.
func insnFeatures(ins *asm.Instruction) []string {
	op := ins.OpCode
	var fs []string
	switch {
	case op.Class() == asm.Jump32Class:
		fs = append(fs, "jmp32 (clang -mcpu=v3)")
	case op.Class() == asm.StXClass && op.Mode() == asm.AtomicMode:
		if op.AtomicOp() == asm.AddAtomic {
			fs = append(fs, "atomic add without fetch")
		} else {
			fs = append(fs, "atomic "+op.AtomicOp().String())
		}
	case ins.IsFunctionCall():
		fs = append(fs, "bpf-to-bpf calls")
	case ins.IsLoadFromMap() && ins.Src == asm.PseudoMapValue:
		fs = append(fs, "global data in a frozen read-only map")
	}
	if op.Class().IsJump() && op.JumpOp() != asm.Call && op.JumpOp() != asm.Exit && ins.Offset < 0 {
		fs = append(fs, "bounded loops (backward jumps)")
	}
	return fs
}

// newer reports whether release a ("major.minor") is newer than b.
func newer(a, b string) bool {
	pa, pb := release(a), release(b)
	return pa[0] > pb[0] || (pa[0] == pb[0] && pa[1] > pb[1])
}

func release(v string) [2]int {
	major, minor, _ := strings.Cut(v, ".")
	x, _ := strconv.Atoi(major)
	y, _ := strconv.Atoi(minor)
	return [2]int{x, y}
}

func table(uses []use) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  %-8s %-58s %-6s %-20s %s\n", "KIND", "FEATURE", "LINUX", "GATE", "SOURCE")
	for _, u := range uses {
		gate := u.since.gate
		if gate == "" {
			gate = "-"
		}
		fmt.Fprintf(&b, "  %-8s %-58s %-6s %-20s %s\n", u.kind, u.name, u.since.version, gate, u.since.source)
	}
	return b.String()
}

// TestVersionTablesAreSane keeps the table's own invariants: gated entries
// are newer than the minimum (else they need no gate), versions parse.
func TestVersionTablesAreSane(t *testing.T) {
	for fn, s := range helperSince {
		if release(s.version)[0] == 0 {
			t.Errorf("helper %s: bad version %q", fn, s.version)
		}
		if s.gate != "" && !newer(s.version, minKernel) {
			t.Errorf("helper %s is gated but Linux %s ≤ %s has it", fn, s.version, minKernel)
		}
	}
	if !newer("5.12", "5.10") || newer("5.10", "5.10") || !newer("6.1", "5.19") {
		t.Error("newer is wrong")
	}
}
