package testbed

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestKeyValues(t *testing.T) {
	got := keyValues([]byte("crictl=/c/bin/crictl\nnoise line\n BRIDGE = pbt1 \nA=b=c\n"))
	want := map[string]string{"crictl": "/c/bin/crictl", "BRIDGE": "pbt1", "A": "b=c"}
	if len(got) != len(want) {
		t.Fatalf("keyValues = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
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
		if got := tail(tc.in, tc.n); got != tc.want {
			t.Errorf("tail(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
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
	if !alive(os.Getpid()) {
		t.Fatal("this process is not alive")
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start a child: %v", err)
	}
	pid := cmd.Process.Pid
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if alive(pid) {
		t.Errorf("exited child %d still counts as alive", pid)
	}
	if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid))); err != nil {
		t.Errorf("child %d was reaped already; the zombie case was not exercised", pid)
	}
	_ = cmd.Wait()
	if alive(pid) {
		t.Errorf("reaped child %d counts as alive", pid)
	}
}

func TestExecExitPattern(t *testing.T) {
	tests := []struct {
		msg  string
		want string
	}{
		{"crictl exec -s c sh -c exit 3: exit status 1: time=... level=fatal msg=\"execing command in container c synchronously: command 'sh -c exit 3' exited with 3:", "3"},
		{"command 'false' exited with 1: oops", "1"},
		{"rpc error: code = NotFound desc = container not found", ""},
	}
	for _, tc := range tests {
		got := ""
		if m := execExit.FindStringSubmatch(tc.msg); m != nil {
			got = m[1]
		}
		if got != tc.want {
			t.Errorf("exit code from %q = %q, want %q", tc.msg, got, tc.want)
		}
	}
}

func TestFindScripts(t *testing.T) {
	dir, err := findScripts()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"build.sh", "images.sh", "up.sh", "down.sh", "env.sh"} {
		st, err := os.Stat(filepath.Join(dir, s))
		if err != nil || st.Mode()&0o111 == 0 {
			t.Errorf("%s in %s: not an executable script (%v)", s, dir, err)
		}
	}
}

func TestOptions(t *testing.T) {
	tests := []struct {
		name string
		opt  Option
		want string
	}{
		{"relative cache", WithCacheDir("cache"), "cache dir must be absolute"},
		{"empty scripts", WithScriptsDir(""), "empty scripts dir"},
		{"zero timeout", WithStartTimeout(0), "must be positive"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newBed(t, []Option{tc.opt})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("newBed = %v, want error containing %q", err, tc.want)
			}
		})
	}
	b, err := newBed(t, []Option{WithCacheDir("/c"), WithScriptsDir("/s"), WithStartTimeout(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if b.cacheDir != "/c" || b.scripts != "/s" || b.startTimeout != time.Minute {
		t.Errorf("options not applied: %+v", b)
	}
}
