package deploy_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/probelet/probelet/cmd/probelet/agent"
	"github.com/probelet/probelet/cmd/probelet/criproxy"
)

// maxExposure is the highest `systemd-analyze security` exposure each unit
// may have (systemd 252 scored the proxy 1.5 and the prober 5.0; both were
// 9.6 before they were hardened): a change that loosens one fails here.
var maxExposure = map[string]float64{"probelet-cri-proxy.service": 2.0, "probelet.service": 5.5}

// TestSystemdUnits checks the host install (systemd/): the CRI proxy's
// service runs `probelet cri-proxy` on the socket its socket unit holds,
// restarts forever before the kubelet, and is hardened (no capabilities,
// no new privileges, a read-only system, its own memory ceiling); the
// prober's service needs nothing of the proxy and keeps only what direct
// exec needs; the prober's configuration is valid; and, where
// systemd-analyze exists, systemd accepts the units and scores the proxy.
func TestSystemdUnits(t *testing.T) {
	cfg, err := agent.LoadFile(filepath.Join("systemd", "config.yaml"), agent.Default())
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	socket := unitKeys(t, "probelet-cri-proxy.socket")
	if socket["Service"] != "probelet-cri-proxy.service" {
		t.Errorf("the socket activates %q", socket["Service"])
	}
	proxy := unitKeys(t, "probelet-cri-proxy.service")
	args := strings.Fields(proxy["ExecStart"])
	if len(args) < 2 || args[0] != "/usr/local/bin/probelet" || args[1] != "cri-proxy" {
		t.Fatalf("probelet-cri-proxy.service runs %q, want probelet cri-proxy", proxy["ExecStart"])
	}
	pc := criproxy.Default()
	for i := 2; i+1 < len(args); i += 2 {
		switch args[i] {
		case "--listen":
			pc.Listen = args[i+1]
		case "--runtime-endpoint":
			pc.RuntimeEndpoint = args[i+1]
		case "--metrics-bind-address":
			pc.MetricsBindAddress = args[i+1]
		default:
			t.Errorf("probelet-cri-proxy.service: flag %s not checked here", args[i])
		}
	}
	if err := pc.Validate(); err != nil {
		t.Errorf("probelet-cri-proxy.service: %v", err)
	}
	if want := "unix://" + socket["ListenStream"]; pc.Listen != want {
		t.Errorf("the proxy listens on %q, its socket unit on %q", pc.Listen, want)
	}
	if pc.RuntimeEndpoint != cfg.RuntimeEndpoint {
		t.Errorf("the proxy forwards to %q, the prober's runtime is %q", pc.RuntimeEndpoint, cfg.RuntimeEndpoint)
	}
	for key, want := range map[string]string{
		"Restart": "always", "StartLimitIntervalSec": "0", "Requires": "probelet-cri-proxy.socket",
		"Before": "kubelet.service", "NoNewPrivileges": "yes", "CapabilityBoundingSet": "",
		"ProtectSystem": "strict", "ProtectHome": "yes", "PrivateTmp": "yes", "MemoryMax": "256M",
		"RestrictAddressFamilies": "AF_UNIX AF_INET AF_INET6",
	} {
		if v, ok := proxy[key]; !ok || v != want {
			t.Errorf("probelet-cri-proxy.service %s=%q (set: %v), want %q", key, v, ok, want)
		}
	}

	// The prober's unit keeps the DaemonSet's capabilities (its contract,
	// wantCaps, for the TCP mode of config.yaml) and no more.
	var caps []string
	for _, c := range wantCaps(cfg.TCPMode) {
		caps = append(caps, "CAP_"+string(c))
	}
	prober := unitKeys(t, "probelet.service")
	for key, want := range map[string]string{
		"ExecStart": "/usr/local/bin/probelet --config /etc/probelet/config.yaml", "Restart": "always",
		"CapabilityBoundingSet": strings.Join(caps, " "), "NoNewPrivileges": "yes",
		"ProtectSystem": "strict", "ProtectHome": "yes", "PrivateTmp": "yes", "MemoryMax": "256M",
		"StateDirectory": "probelet", "RuntimeDirectory": "probelet",
	} {
		if prober[key] != want {
			t.Errorf("probelet.service %s=%q, want %q", key, prober[key], want)
		}
	}
	if v, ok := prober["Requires"]; ok {
		t.Errorf("probelet.service requires %s: the prober needs nothing of the proxy", v)
	}
	if cfg.ExecMode != "runtime" {
		t.Errorf("config.yaml execMode %q: the unit's bounding set is for runtime exec (see its comment)", cfg.ExecMode)
	}

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("systemd-analyze not installed; units not checked by systemd")
		return
	}
	dir := t.TempDir()
	names := []string{"probelet-cri-proxy.socket", "probelet-cri-proxy.service", "probelet.service"}
	var paths []string
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join("systemd", name))
		if err != nil {
			t.Fatal(err)
		}
		// verify wants the binary to exist.
		data = []byte(strings.ReplaceAll(string(data), "/usr/local/bin/probelet", "/bin/true"))
		paths = append(paths, filepath.Join(dir, name))
		if err := os.WriteFile(paths[len(paths)-1], data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(analyze, append([]string{"verify", "--man=no"}, paths...)...)
	cmd.Env = append(os.Environ(), "SYSTEMD_LOG_LEVEL=warning")
	if out, err := cmd.CombinedOutput(); err != nil || strings.Contains(string(out), dir) {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	for _, path := range paths[1:] {
		out, err := exec.Command(analyze, "security", "--offline=yes", path).CombinedOutput()
		m := regexp.MustCompile(`Overall exposure level for \S+: ([0-9.]+)`).FindSubmatch(out)
		if err != nil || m == nil {
			t.Errorf("systemd-analyze security %s: %v\n%s", filepath.Base(path), err, out)
			continue
		}
		exposure, _ := strconv.ParseFloat(string(m[1]), 64)
		t.Logf("systemd-analyze security: %s exposure %.1f", filepath.Base(path), exposure)
		if limit := maxExposure[filepath.Base(path)]; exposure > limit {
			t.Errorf("%s exposure %.1f, more than %.1f:\n%s", filepath.Base(path), exposure, limit, out)
		}
	}
}

// unitKeys reads KEY=VALUE lines of a unit file (last one wins).
func unitKeys(t *testing.T, name string) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join("systemd", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	kv := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "[") {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			kv[k] = v
		}
	}
	return kv
}

// TestCRIProxyDirectExecDropIn: the drop-in for --exec-mode direct runs
// the unit's own command with the flag, and resets every setting of the
// unit that the helper's commands would inherit or that stops the helper
// (its comment says why each); where systemd-analyze exists, systemd
// loads the unit with it and scores it as unconfined as runc's parent.
func TestCRIProxyDirectExecDropIn(t *testing.T) {
	base := unitKeys(t, "probelet-cri-proxy.service")
	dropIn := unitKeys(t, "probelet-cri-proxy-exec-direct.conf")
	if want := base["ExecStart"] + " --exec-mode direct"; dropIn["ExecStart"] != want {
		t.Errorf("the drop-in runs %q, want %q", dropIn["ExecStart"], want)
	}
	resets := map[string]string{
		"CapabilityBoundingSet": "~", "NoNewPrivileges": "no", "PrivateDevices": "no", "ProtectKernelTunables": "no",
		"ProtectKernelModules": "no", "ProtectKernelLogs": "no", "ProtectControlGroups": "no", "ProtectClock": "no",
		"ProtectHostname": "no", "ProtectProc": "default", "ProcSubset": "all", "RestrictAddressFamilies": "",
		"RestrictNamespaces": "no", "RestrictRealtime": "no", "RestrictSUIDSGID": "no", "LockPersonality": "no",
		"MemoryDenyWriteExecute": "no", "SystemCallArchitectures": "", "SystemCallFilter": "", "UMask": "0022",
	}
	for key, want := range resets {
		if got, ok := dropIn[key]; !ok || got != want {
			t.Errorf("the drop-in %s=%q (set: %v), want %q", key, got, ok, want)
		}
		if _, ok := base[key]; !ok {
			t.Errorf("the drop-in resets %s, which the unit does not set", key)
		}
	}

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("systemd-analyze not installed; the drop-in not checked by systemd")
		return
	}
	dir := t.TempDir()
	for src, dst := range map[string]string{
		"probelet-cri-proxy.service":          "probelet-cri-proxy.service",
		"probelet-cri-proxy.socket":           "probelet-cri-proxy.socket",
		"probelet-cri-proxy-exec-direct.conf": "probelet-cri-proxy.service.d/exec-direct.conf",
	} {
		data, err := os.ReadFile(filepath.Join("systemd", src))
		if err != nil {
			t.Fatal(err)
		}
		data = []byte(strings.ReplaceAll(string(data), "/usr/local/bin/probelet", "/bin/true"))
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, dst)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, dst), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	unit := filepath.Join(dir, "probelet-cri-proxy.service")
	env := append(os.Environ(), "SYSTEMD_LOG_LEVEL=warning", "SYSTEMD_UNIT_PATH="+dir+":")
	verify := exec.Command(analyze, "verify", "--man=no", unit)
	verify.Env = env
	if out, err := verify.CombinedOutput(); err != nil || strings.Contains(string(out), dir) {
		t.Errorf("systemd-analyze verify with the drop-in: %v\n%s", err, out)
	}
	security := exec.Command(analyze, "security", "--offline=yes", unit)
	security.Env = env
	out, _ := security.CombinedOutput()
	m := regexp.MustCompile(`Overall exposure level for \S+: ([0-9.]+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("systemd-analyze security with the drop-in:\n%s", out)
	}
	exposure, _ := strconv.ParseFloat(string(m[1]), 64)
	t.Logf("systemd-analyze security: probelet-cri-proxy.service with the drop-in, exposure %.1f", exposure)
	for _, setting := range []string{"NoNewPrivileges=", "SystemCallFilter=~@privileged", "CapabilityBoundingSet=~CAP_SYS_ADMIN", "RestrictNamespaces=~"} {
		if !regexp.MustCompile(`✗ ` + regexp.QuoteMeta(setting)).Match(out) {
			t.Errorf("systemd still applies %s with the drop-in:\n%s", setting, out)
		}
	}
}
