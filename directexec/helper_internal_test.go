package directexec

import (
	"context"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/probelet/probelet/internal/testutil"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

var helperBuild struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

// testHelper builds probelet-exec once per test run, as make does; tests
// that need it skip where it cannot be built (no compiler, not root to
// install one), and fail in CI.
func testHelper(t testing.TB) string {
	t.Helper()
	helperBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "probelet-exec-test")
		if err != nil {
			helperBuild.err = err
			return
		}
		helperBuild.path = filepath.Join(dir, HelperName)
		_, file, _, _ := runtime.Caller(0)
		script := filepath.Join(filepath.Dir(file), "..", "hack", "build-exec-helper.sh")
		helperBuild.out, helperBuild.err = exec.Command(script, helperBuild.path).CombinedOutput()
	})
	if helperBuild.err != nil {
		testutil.Unavailable(t, "cannot build the exec helper: %v\n%s", helperBuild.err, helperBuild.out)
	}
	return helperBuild.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if helperBuild.path != "" {
		os.RemoveAll(filepath.Dir(helperBuild.path))
	}
	os.Exit(code)
}

func TestHelperVersion(t *testing.T) {
	if err := checkHelper(testHelper(t)); err != nil {
		t.Fatal(err)
	}
	if err := checkHelper("/bin/true"); err == nil {
		t.Error("a helper that prints nothing was accepted")
	}
}

// TestCompiledRuntimeDefault compiles containerd's RuntimeDefault profile
// (as the bed wrote it) with libseccomp through the helper and runs the
// whole program, stub and filter, on x86_64 and i386 calls.
func TestCompiledRuntimeDefault(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("syscall numbers below are x86_64's")
	}
	cfg, err := parseConfig(fixture(t, "config-runtime-default.json", nil))
	if err != nil {
		t.Fatal(err)
	}
	prog, err := compileSeccomp(context.Background(), testHelper(t), cfg.Linux.Seccomp)
	if err != nil {
		t.Fatal(err)
	}
	if prog.flags&^uint32(1<<2) != 0 {
		t.Errorf("flags %#x: want at most SECCOMP_FILTER_FLAG_SPEC_ALLOW, runc's default", prog.flags)
	}
	eperm := actErrno | errnoEPERM
	tests := []struct {
		name string
		nr   uint32
		arch uint32
		args []uint64
		want uint32
	}{
		{"read", 0, archAMD64, nil, actAllow},
		{"kexec_load, not allowed", 246, archAMD64, nil, eperm},
		{"a syscall newer than the profile", 1000, archAMD64, nil, enosys},
		{"clone3 gets ENOSYS from the profile itself", 435, archAMD64, nil, enosys},
		{"socket(AF_INET)", 41, archAMD64, []uint64{2}, actAllow},
		{"socket(AF_VSOCK), not allowed", 41, archAMD64, []uint64{40}, eperm},
		{"personality(PER_LINUX32)", 135, archAMD64, []uint64{8}, actAllow},
		{"personality(1), not allowed", 135, archAMD64, []uint64{1}, eperm},
		{"i386 read", 3, archI386, nil, actAllow},
		{"i386, newer than the profile", 1000, archI386, nil, enosys},
		{"an architecture not in the profile", 0, 0xb7, nil, actKillThread},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := runFilter(t, prog.prog, seccompData(tt.nr, tt.arch, tt.args...)); got != tt.want {
				t.Fatalf("→ %#x, want %#x", got, tt.want)
			}
		})
	}
}

func TestCompileRefusesWhatLibseccompRefuses(t *testing.T) {
	s := &specs.LinuxSeccomp{DefaultAction: "SCMP_ACT_ERRNO", Flags: []specs.LinuxSeccompFlag{"SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV"},
		Syscalls: []specs.LinuxSyscall{{Names: []string{"read"}, Action: "SCMP_ACT_ALLOW"}}}
	_, err := compileSeccomp(context.Background(), testHelper(t), s)
	if u, ok := err.(*unsupported); !ok || u.reason != reasonSeccomp {
		t.Fatalf("compileSeccomp = %v, want a seccomp fallback (libseccomp 2.5 lacks the flag, so does runc built on it)", err)
	}
}

// TestHelperHardened: the helper is built static, with full RELRO and
// eager binding, a strong stack protector and _FORTIFY_SOURCE=3 (its
// .probelet.hardening note, and fortified calls in the binary), and as a
// static PIE wherever the toolchain links one.
func TestHelperHardened(t *testing.T) {
	f, err := elf.Open(testHelper(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var relro bool
	for _, p := range f.Progs {
		switch p.Type {
		case elf.PT_INTERP:
			t.Error("the helper has a program interpreter: not static")
		case elf.PT_GNU_RELRO:
			relro = true
		}
	}
	if !relro {
		t.Error("no PT_GNU_RELRO segment: built without -z relro")
	}
	flags, _ := f.DynValue(elf.DT_FLAGS)
	flags1, _ := f.DynValue(elf.DT_FLAGS_1)
	if !slices.ContainsFunc(flags, func(v uint64) bool { return v&uint64(elf.DF_BIND_NOW) != 0 }) &&
		!slices.ContainsFunc(flags1, func(v uint64) bool { return v&uint64(elf.DF_1_NOW) != 0 }) {
		t.Error("no BIND_NOW: built without -z now (partial RELRO only)")
	}
	note := f.Section(".probelet.hardening")
	if note == nil {
		t.Fatal("no .probelet.hardening section")
	}
	data, err := note.Data()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.TrimRight(string(data), "\x00")
	pie := staticPIELinks(t)
	want := "fortify=3 ssp=strong pie=no"
	if pie {
		want = "fortify=3 ssp=strong pie=yes"
	}
	if got != want {
		t.Errorf("hardening note %q, want %q", got, want)
	}
	isPIE := f.Type == elf.ET_DYN && slices.ContainsFunc(flags1, func(v uint64) bool { return v&uint64(elf.DF_1_PIE) != 0 })
	if pie && !isPIE {
		t.Errorf("the toolchain links static PIEs, but the helper is %v (DT_FLAGS_1 %#x)", f.Type, flags1)
	}
	// libc's own objects call a few checked functions; these two come
	// from the helper's own snprintf and read calls, rewritten by
	// _FORTIFY_SOURCE.
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"__snprintf_chk", "__read_chk", "__stack_chk_fail"} {
		if !slices.ContainsFunc(syms, func(s elf.Symbol) bool { return s.Name == name }) {
			t.Errorf("no %s in the helper", name)
		}
	}
}

// staticPIELinks reports whether the C compiler links a static PIE.
func staticPIELinks(t *testing.T) bool {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "main.c")
	if err := os.WriteFile(src, []byte("int main(void) { return 0; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cc := strings.Fields(os.Getenv("CC")) // as the script's unquoted ${CC:-gcc}
	if len(cc) == 0 {
		cc = []string{"gcc"}
	}
	args := append(cc[1:], "-fPIE", "-static-pie", "-o", filepath.Join(dir, "main"), src)
	return exec.Command(cc[0], args...).Run() == nil
}
