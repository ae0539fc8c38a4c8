package directexec

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/probelet/probelet/internal/testutil"
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
func testHelper(t *testing.T) string {
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
	s := &ociSeccomp{DefaultAction: "SCMP_ACT_ERRNO", Flags: &[]string{"SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV"},
		Syscalls: []ociSyscall{{Names: []string{"read"}, Action: "SCMP_ACT_ALLOW"}}}
	_, err := compileSeccomp(context.Background(), testHelper(t), s)
	if u, ok := err.(*unsupported); !ok || u.reason != reasonSeccomp {
		t.Fatalf("compileSeccomp = %v, want a seccomp fallback (libseccomp 2.5 lacks the flag, so does runc built on it)", err)
	}
}
