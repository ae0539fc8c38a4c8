package directexec

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// fixture reads a config.json the test bed's containerd wrote, applying
// edit (on its generic JSON form) first.
func fixture(t *testing.T, name string, edit func(map[string]any)) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if edit == nil {
		return b
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	return b
}

func section(m map[string]any, key string) map[string]any { return m[key].(map[string]any) }

func TestParseConfigRefusesWhatItDoesNotApply(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(map[string]any)
		reason string // "" accepted
	}{
		{"the bed's default container", nil, ""},
		{"a VM section", func(m map[string]any) { m["vm"] = map[string]any{} }, reasonSpec},
		{"an unknown process field", func(m map[string]any) { section(m, "process")["fancy"] = true }, reasonSpec},
		{"an unknown user field", func(m map[string]any) { section(section(m, "process"), "user")["sid"] = 1 }, reasonSpec},
		{"an AppArmor profile (the helper applies it)", func(m map[string]any) { section(m, "process")["apparmorProfile"] = "cri-containerd.apparmor.d" }, ""},
		{"an SELinux label", func(m map[string]any) { section(m, "process")["selinuxLabel"] = "system_u:system_r:container_t:s0" }, reasonLSM},
		{"a scheduler", func(m map[string]any) { section(m, "process")["scheduler"] = map[string]any{"policy": "SCHED_IDLE"} }, reasonProcess},
		{"an I/O priority", func(m map[string]any) {
			section(m, "process")["ioPriority"] = map[string]any{"class": "IOPRIO_CLASS_IDLE"}
		}, reasonProcess},
		{"an exec CPU affinity", func(m map[string]any) { section(m, "process")["execCPUAffinity"] = map[string]any{"final": "0"} }, reasonProcess},
		{"no capabilities", func(m map[string]any) { delete(section(m, "process"), "capabilities") }, reasonProcess},
		{"a Windows user name", func(m map[string]any) { section(section(m, "process"), "user")["username"] = "ContainerUser" }, reasonProcess},
		{"an unknown rlimit", func(m map[string]any) {
			section(m, "process")["rlimits"] = []any{map[string]any{"type": "RLIMIT_FOO", "hard": 1, "soft": 1}}
		}, reasonProcess},
		{"no cwd", func(m map[string]any) { section(m, "process")["cwd"] = "" }, reasonProcess},
		{"an Intel RDT group", func(m map[string]any) { section(m, "linux")["intelRdt"] = map[string]any{"closID": "x"} }, reasonSpec},
		{"a personality", func(m map[string]any) { section(m, "linux")["personality"] = map[string]any{"domain": "LINUX32"} }, reasonSpec},
		{"a memory policy", func(m map[string]any) { section(m, "linux")["memoryPolicy"] = map[string]any{"mode": "MPOL_BIND"} }, reasonSpec},
		{"a null personality", func(m map[string]any) { section(m, "linux")["personality"] = nil }, ""},
		{"an unknown linux field", func(m map[string]any) { section(m, "linux")["landlock"] = map[string]any{} }, reasonSpec},
		{"an unknown namespace", func(m map[string]any) {
			section(m, "linux")["namespaces"] = []any{map[string]any{"type": "pid"}, map[string]any{"type": "syslog"}}
		}, reasonNamespace},
		{"an unknown seccomp field", func(m map[string]any) {
			section(m, "linux")["seccomp"] = map[string]any{"defaultAction": "SCMP_ACT_ERRNO", "sandbox": true}
		}, reasonSeccomp},
		{"no process", func(m map[string]any) { delete(m, "process") }, reasonSpec},
		{"no linux section", func(m map[string]any) { delete(m, "linux") }, reasonSpec},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseConfig(fixture(t, "config-default.json", tt.edit))
			var u *unsupported
			switch {
			case tt.reason == "" && err != nil:
				t.Fatalf("parseConfig = %v, want it accepted", err)
			case tt.reason != "" && (!errors.As(err, &u) || u.reason != tt.reason):
				t.Fatalf("parseConfig = %v, want it refused for %q", err, tt.reason)
			}
		})
	}
	if _, err := parseConfig([]byte("{")); err == nil {
		t.Error("a truncated config.json was accepted")
	}
}

func TestParseConfigReadsWhatRuncApplies(t *testing.T) {
	cfg, err := parseConfig(fixture(t, "config-runtime-default.json", nil))
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Process
	if p.User.UID != 1000 || p.User.GID != 3000 || !slices.Equal(p.User.AdditionalGids, []uint32{3000, 4000, 5000}) {
		t.Errorf("user %+v, want 1000:3000 with groups 3000 4000 5000", p.User)
	}
	if !p.NoNewPrivileges || p.Cwd != "/" || len(p.Capabilities.Bounding) != 14 {
		t.Errorf("process %+v", p)
	}
	s := cfg.Linux.Seccomp
	if s == nil || s.DefaultAction != "SCMP_ACT_ERRNO" || len(s.Architectures) != 3 || s.Flags != nil || len(s.Syscalls) != 18 {
		t.Fatalf("seccomp %+v, want the RuntimeDefault profile", s)
	}
	if len(cfg.Linux.Namespaces) != 5 || !slices.ContainsFunc(cfg.Linux.Namespaces, func(n specs.LinuxNamespace) bool { return n.Type == "mount" }) {
		t.Errorf("namespaces %+v", cfg.Linux.Namespaces)
	}
	cfg, err = parseConfig(fixture(t, "config-userns.json", nil))
	if err != nil || !slices.ContainsFunc(cfg.Linux.Namespaces, func(n specs.LinuxNamespace) bool { return n.Type == "user" }) {
		t.Errorf("user namespace container: %+v, %v", cfg, err)
	}
}

func TestPrepareEnvIsRuncs(t *testing.T) {
	tests := []struct {
		name     string
		env      []string
		want     []string
		wantHome bool
		wantErr  bool
	}{
		{"no HOME", []string{"PATH=/bin", "A=1"}, []string{"PATH=/bin", "A=1"}, true, false},
		{"the last duplicate wins, in its place", []string{"A=1", "B=2", "A=3"}, []string{"B=2", "A=3"}, true, false},
		{"HOME kept", []string{"HOME=/home/app", "A=1"}, []string{"HOME=/home/app", "A=1"}, false, false},
		{"empty HOME dropped", []string{"HOME=", "A=1"}, []string{"A=1"}, true, false},
		{"a later empty HOME wins and is dropped", []string{"HOME=/h", "HOME="}, nil, true, false},
		{"a value with =", []string{"A=b=c"}, []string{"A=b=c"}, true, false},
		{"missing =", []string{"A"}, nil, false, true},
		{"empty name", []string{"=x"}, nil, false, true},
		{"NUL byte", []string{"A=x\x00y"}, nil, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, home, err := prepareEnv(tt.env)
			if (err != nil) != tt.wantErr || !slices.Equal(got, tt.want) || (err == nil && home != tt.wantHome) {
				t.Fatalf("prepareEnv(%q) = %q, home %v, %v; want %q, home %v, error %v", tt.env, got, home, err, tt.want, tt.wantHome, tt.wantErr)
			}
		})
	}
}

func TestCapMaskIgnoresWhatTheKernelLacks(t *testing.T) {
	// The bed's default set: CapEff a80425fb in /proc/self/status.
	def := []string{"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW", "CAP_SETGID",
		"CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE"}
	if got := capMask(def, 40); got != 0xa80425fb {
		t.Errorf("default set = %#x, want 0xa80425fb", got)
	}
	if got := capMask([]string{"CAP_BPF", "CAP_CHECKPOINT_RESTORE", "CAP_NO_SUCH_THING"}, 39); got != 1<<39 {
		t.Errorf("= %#x, want only CAP_BPF (40 is above the kernel's last, the unknown one ignored)", got)
	}
}
