package nriinstall_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/probelet/probelet/deploy/nriinstall"
)

// layout is a fake host: <root>/opt/nri/plugins, <root>/etc/nri/conf.d.
type layout struct {
	root, plugins, conf, binary string
}

func newLayout(t *testing.T, exe string) layout {
	t.Helper()
	root := t.TempDir()
	l := layout{
		root:    root,
		plugins: filepath.Join(root, "opt", "nri", "plugins"),
		conf:    filepath.Join(root, "etc", "nri", "conf.d"),
		binary:  filepath.Join(root, "probelet"),
	}
	if err := os.MkdirAll(filepath.Dir(l.plugins), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, l.binary, exe, 0o700)
	return l
}

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func mustNew(t *testing.T, l layout, opts ...nriinstall.Option) *nriinstall.Installer {
	t.Helper()
	inst, err := nriinstall.New(l.plugins, l.conf, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

// assertFile checks content and permission bits.
func assertFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, []byte(content)) || info.Mode().Perm() != mode {
		t.Errorf("%s: %q mode %v, want %q mode %v", path, b, info.Mode().Perm(), content, mode)
	}
}

func TestInstallSequence(t *testing.T) {
	l := newLayout(t, "exe-v1")
	inst := mustNew(t, l)
	steps := []struct {
		name       string
		exe        string // new content of the source binary, "" = keep
		config     []byte
		wantPlugin bool // PluginChanged
		wantConfig bool // ConfigChanged
		wantConf   string
		confExists bool
	}{
		{name: "fresh", config: []byte("--tcp-mode=auto\n"), wantPlugin: true, wantConfig: true, wantConf: "--tcp-mode=auto\n", confExists: true},
		{name: "same again", config: []byte("--tcp-mode=auto\n"), wantConf: "--tcp-mode=auto\n", confExists: true},
		{name: "new binary", exe: "exe-v2", config: []byte("--tcp-mode=auto\n"), wantPlugin: true, wantConf: "--tcp-mode=auto\n", confExists: true},
		{name: "new config", config: []byte("--tcp-mode=dial\n"), wantConfig: true, wantConf: "--tcp-mode=dial\n", confExists: true},
		{name: "empty config is a config", config: []byte{}, wantConfig: true, wantConf: "", confExists: true},
		{name: "no config removes it", config: nil, wantConfig: true},
		{name: "still none", config: nil},
	}
	exe := "exe-v1"
	for _, s := range steps {
		if s.exe != "" {
			exe = s.exe
			writeFile(t, l.binary, exe, 0o700)
		}
		res, err := inst.Install(l.binary, s.config)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if res.PluginChanged != s.wantPlugin || res.ConfigChanged != s.wantConfig || len(res.Problems) > 0 {
			t.Errorf("%s: result %+v, want plugin changed %v, config changed %v", s.name, res, s.wantPlugin, s.wantConfig)
		}
		assertFile(t, inst.PluginPath(), exe, 0o755)
		if s.confExists {
			assertFile(t, inst.ConfigPath(), s.wantConf, 0o644)
		} else if _, err := os.Stat(inst.ConfigPath()); !os.IsNotExist(err) {
			t.Errorf("%s: config still there (%v)", s.name, err)
		}
		assertNoLeftovers(t, l)
	}
}

// assertNoLeftovers: no staging file survives an install.
func assertNoLeftovers(t *testing.T, l layout) {
	t.Helper()
	for _, dir := range []string{filepath.Dir(l.plugins), l.plugins, l.conf} {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".probelet-install-") {
				t.Errorf("staging file %s/%s left behind", dir, e.Name())
			}
		}
	}
}

func TestInstallPaths(t *testing.T) {
	l := newLayout(t, "exe")
	inst := mustNew(t, l, nriinstall.WithIndex("05"), nriinstall.WithName("probelet-test"))
	if got, want := inst.PluginPath(), filepath.Join(l.plugins, "05-probelet-test"); got != want {
		t.Errorf("PluginPath = %s, want %s", got, want)
	}
	if got, want := inst.ConfigPath(), filepath.Join(l.conf, "05-probelet-test.conf"); got != want {
		t.Errorf("ConfigPath = %s, want %s", got, want)
	}
}

func TestUninstall(t *testing.T) {
	l := newLayout(t, "exe")
	inst := mustNew(t, l)
	if _, err := inst.Install(l.binary, []byte("x")); err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false} {
		res, err := inst.Uninstall()
		if err != nil {
			t.Fatal(err)
		}
		if res.PluginChanged != want || res.ConfigChanged != want {
			t.Errorf("uninstall #%d: %+v, want changed=%v", i+1, res, want)
		}
	}
	for _, p := range []string{inst.PluginPath(), inst.ConfigPath()} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s still there (%v)", p, err)
		}
	}
}

// TestProblems: NRI's discovery gives up on every pre-installed plugin when
// one executable in the directory is not named <idx>-<name>.
func TestProblems(t *testing.T) {
	cases := []struct {
		name, file string
		mode       os.FileMode
		want       string
	}{
		{name: "executable without index", file: "probelet", mode: 0o755, want: "probelet blocks all pre-installed NRI plugins"},
		{name: "one-digit index", file: "1-logger", mode: 0o755, want: `invalid plugin index "1"`},
		{name: "not executable", file: "README", mode: 0o644},
		{name: "valid neighbour", file: "20-logger", mode: 0o755},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := newLayout(t, "exe")
			if err := os.MkdirAll(l.plugins, 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(l.plugins, tc.file), "x", tc.mode)
			res, err := mustNew(t, l).Install(l.binary, nil)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.want == "" && len(res.Problems) > 0:
				t.Errorf("problems %v, want none", res.Problems)
			case tc.want != "" && (len(res.Problems) != 1 || !strings.Contains(res.Problems[0].Error(), tc.want)):
				t.Errorf("problems %v, want one containing %q", res.Problems, tc.want)
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	l := newLayout(t, "exe")
	cases := []struct {
		name string
		new  func() (*nriinstall.Installer, error)
		want string
	}{
		{"empty plugin dir", func() (*nriinstall.Installer, error) { return nriinstall.New("", l.conf) }, "must be set"},
		{"one-digit index", func() (*nriinstall.Installer, error) {
			return nriinstall.New(l.plugins, l.conf, nriinstall.WithIndex("1"))
		}, `invalid plugin index "1"`},
		{"letters as index", func() (*nriinstall.Installer, error) {
			return nriinstall.New(l.plugins, l.conf, nriinstall.WithIndex("ab"))
		}, "not [0-9][0-9]"},
		{"slash in name", func() (*nriinstall.Installer, error) {
			return nriinstall.New(l.plugins, l.conf, nriinstall.WithName("a/b"))
		}, "invalid character"},
		{"staging in the plugin dir", func() (*nriinstall.Installer, error) {
			return nriinstall.New(l.plugins, l.conf, nriinstall.WithStagingDir(l.plugins+"/"))
		}, "must not be the plugin directory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.new(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	if _, err := mustNew(t, l).Install(filepath.Join(l.root, "missing"), nil); err == nil || !strings.Contains(err.Error(), "read plugin executable") {
		t.Errorf("missing binary: error %v", err)
	}
}

// TestStagingOnAnotherFilesystem: a rename across filesystems is not atomic
// and fails; the error says why and nothing is left behind.
func TestStagingOnAnotherFilesystem(t *testing.T) {
	l := newLayout(t, "exe")
	other, err := os.MkdirTemp("/dev/shm", "nriinstall-")
	if err != nil {
		t.Skip("no /dev/shm:", err)
	}
	defer os.RemoveAll(other)
	if sameDevice(t, other, l.root) {
		t.Skip("/dev/shm and the test directory share a filesystem")
	}
	inst := mustNew(t, l, nriinstall.WithStagingDir(other))
	_, err = inst.Install(l.binary, nil)
	if err == nil || !strings.Contains(err.Error(), "is on another filesystem") {
		t.Fatalf("error %v, want a cross-filesystem error", err)
	}
	if entries, _ := os.ReadDir(other); len(entries) > 0 {
		t.Errorf("staging file left in %s: %v", other, entries)
	}
}

func sameDevice(t *testing.T, a, b string) bool {
	var sa, sb syscall.Stat_t
	if syscall.Stat(a, &sa) != nil || syscall.Stat(b, &sb) != nil {
		t.Skip("cannot stat test directories")
	}
	return sa.Dev == sb.Dev
}

// TestInstallComparesLargeExecutablesInChunks: an executable larger than
// one comparison chunk is left alone when equal and rewritten when it
// differs anywhere, even at the same size.
func TestInstallComparesLargeExecutablesInChunks(t *testing.T) {
	big := strings.Repeat("probelet", 40_000) // 320 kB, five chunks
	l := newLayout(t, big)
	inst := mustNew(t, l)
	if res, err := inst.Install(l.binary, nil); err != nil || !res.PluginChanged {
		t.Fatalf("first install: %+v, %v", res, err)
	}
	steps := []struct {
		name, exe string
		changed   bool
	}{
		{"same", big, false},
		{"last byte differs", big[:len(big)-1] + "X", true},
		{"first byte differs", "X" + big[1:len(big)-1] + "X", true},
		{"shorter", big[:len(big)-8], true},
	}
	for _, s := range steps {
		writeFile(t, l.binary, s.exe, 0o700)
		res, err := inst.Install(l.binary, nil)
		if err != nil || res.PluginChanged != s.changed {
			t.Errorf("%s: %+v, %v; want changed %v", s.name, res, err, s.changed)
		}
		assertFile(t, inst.PluginPath(), s.exe, 0o755)
	}
}

// TestInstallRemovesStaleStagedCopies: an installer killed between staging
// and renaming (an OOM kill, a node reboot) leaves a temporary copy; the
// next install removes it, and nothing else.
func TestInstallRemovesStaleStagedCopies(t *testing.T) {
	l := newLayout(t, "exe")
	inst := mustNew(t, l)
	if err := os.MkdirAll(l.conf, 0o755); err != nil {
		t.Fatal(err)
	}
	staging := filepath.Dir(l.plugins)
	writeFile(t, filepath.Join(staging, ".probelet-install-123"), "half an executable", 0o600)
	writeFile(t, filepath.Join(l.conf, ".probelet-install-456"), "half a config", 0o600)
	writeFile(t, filepath.Join(staging, ".keep"), "someone else's", 0o644)
	if _, err := inst.Install(l.binary, []byte("--tcp-mode=auto\n")); err != nil {
		t.Fatal(err)
	}
	assertNoLeftovers(t, l)
	assertFile(t, filepath.Join(staging, ".keep"), "someone else's", 0o644)
}
