package harness

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/testutil"
)

func TestParseEnv(t *testing.T) {
	got := ParseEnv([]byte("kubectl=/c/bin/kubectl\nnoise line\n BRIDGE = pbt1 \nA=b=c\n"))
	want := map[string]string{"kubectl": "/c/bin/kubectl", "BRIDGE": "pbt1", "A": "b=c"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseEnv = %v, want %v", got, want)
	}
}

func TestTail(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"a\nb\nc\n", 2, "b\nc"},
		{"a\nb", 5, "a\nb"},
		{"", 3, ""},
	}
	for _, tc := range tests {
		if got := Tail(tc.in, tc.n); got != tc.want {
			t.Errorf("Tail(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

func TestHasArg(t *testing.T) {
	cmdline := []byte("containerd\x00--config\x00/tmp/pbt-1/config.toml\x00")
	if !hasArg(cmdline, "/tmp/pbt-1/config.toml") {
		t.Error("exact argument not found")
	}
	if hasArg(cmdline, "/tmp/pbt-1") || hasArg(cmdline, "/tmp/pbt-10/config.toml") {
		t.Error("a prefix or a different path matched")
	}
}

// TestAliveTreatsZombiesAsExited uses a real child that exits and is not yet
// reaped.
func TestAliveTreatsZombiesAsExited(t *testing.T) {
	if !Alive(os.Getpid()) {
		t.Fatal("this process is not alive")
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start a child: %v", err)
	}
	pid := cmd.Process.Pid
	testutil.WaitFor(t, "exited child "+strconv.Itoa(pid)+" to count as not alive", func() bool { return !Alive(pid) })
	if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid))); err != nil {
		t.Errorf("child %d was reaped already; the zombie case was not exercised", pid)
	}
	_ = cmd.Wait()
	if Alive(pid) {
		t.Errorf("reaped child %d counts as alive", pid)
	}
}

func TestRunningPID(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "x.pid")
	if _, err := RunningPID(pidFile, ""); err != ErrNotRunning {
		t.Errorf("no PID file: %v, want ErrNotRunning", err)
	}
	writeFile(t, pidFile, "nonsense\n")
	if _, err := RunningPID(pidFile, ""); err == nil || err == ErrNotRunning {
		t.Errorf("bad PID file: %v, want a parse error", err)
	}
	writeFile(t, pidFile, strconv.Itoa(os.Getpid())+"\n")
	if pid, err := RunningPID(pidFile, ""); err != nil || pid != os.Getpid() {
		t.Errorf("this process: %d, %v", pid, err)
	}
	if pid, err := RunningPID(pidFile, os.Args[0]); err != nil || pid != os.Getpid() {
		t.Errorf("this process with its own argument: %d, %v", pid, err)
	}
	if _, err := RunningPID(pidFile, "/not/an/argument"); err != ErrNotRunning {
		t.Errorf("this process with another's argument: %v, want ErrNotRunning", err)
	}
}

func TestProcessStartMatchesProc(t *testing.T) {
	start, err := processStart(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// awk's field 22 is right for this process: its comm has no spaces.
	out, err := exec.Command("awk", "{print $22}", "/proc/"+strconv.Itoa(os.Getpid())+"/stat").Output()
	if err != nil {
		t.Skipf("awk: %v", err)
	}
	if want := strings.TrimSpace(string(out)); start != want {
		t.Errorf("processStart = %q, want %q", start, want)
	}
	if _, err := processStart(-1); err == nil {
		t.Error("processStart(-1): no error")
	}
}

func TestLocate(t *testing.T) {
	for name, scripts := range map[string][]string{
		"testbed": {"build.sh", "images.sh", "up.sh", "down.sh", "env.sh", "gc.sh"},
		"cluster": {"build.sh", "up.sh", "down.sh", "env.sh", "kubelet.sh", "gc.sh"},
	} {
		s := NewScripts(name, time.Minute)
		if err := s.Locate(); err != nil {
			t.Fatal(err)
		}
		for _, f := range scripts {
			st, err := os.Stat(filepath.Join(s.Dir, f))
			if err != nil || st.Mode()&0o111 == 0 {
				t.Errorf("%s in %s: not an executable script (%v)", f, s.Dir, err)
			}
		}
	}
}

func TestSetters(t *testing.T) {
	s := NewScripts("testbed", time.Minute)
	for _, err := range []error{s.SetCacheDir("cache"), s.SetDir(""), s.SetStartTimeout(0)} {
		if err == nil || !strings.HasPrefix(err.Error(), "testbed: ") {
			t.Errorf("invalid value: %v, want an error naming testbed", err)
		}
	}
	if s.SetCacheDir("/c") != nil || s.SetDir("/s") != nil || s.SetStartTimeout(time.Hour) != nil {
		t.Fatal("valid values refused")
	}
	if s.CacheDir != "/c" || s.Dir != "/s" || s.StartTimeout != time.Hour {
		t.Errorf("not applied: %+v", s)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
