package deploy_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/probelet/probelet/cmd/probelet/agent"
)

// TestSystemdUnits checks the CRI proxy's host install (systemd/): the
// configuration is valid for the daemon and names the socket the socket
// unit holds, the service restarts forever and runs before the kubelet,
// and, where systemd-analyze exists, systemd accepts both units.
func TestSystemdUnits(t *testing.T) {
	cfg, err := agent.LoadFile(filepath.Join("systemd", "config.yaml"), agent.Default())
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	socket := unitKeys(t, "probelet-cri-proxy.socket")
	if want := "unix://" + socket["ListenStream"]; cfg.CRIProxyListen != want {
		t.Errorf("config criProxyListen %q, socket unit listens on %q", cfg.CRIProxyListen, want)
	}
	svc := unitKeys(t, "probelet.service")
	for key, want := range map[string]string{
		"Restart": "always", "StartLimitIntervalSec": "0", "Requires": "probelet-cri-proxy.socket",
		"Before": "kubelet.service", "ExecStart": "/usr/local/bin/probelet --config /etc/probelet/config.yaml",
	} {
		if svc[key] != want {
			t.Errorf("probelet.service %s=%q, want %q", key, svc[key], want)
		}
	}
	if socket["Service"] != "probelet.service" {
		t.Errorf("the socket activates %q", socket["Service"])
	}

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("systemd-analyze not installed; unit syntax not checked by systemd")
		return
	}
	dir := t.TempDir()
	for _, name := range []string{"probelet-cri-proxy.socket", "probelet.service"} {
		data, err := os.ReadFile(filepath.Join("systemd", name))
		if err != nil {
			t.Fatal(err)
		}
		// verify wants the binary to exist.
		data = []byte(strings.ReplaceAll(string(data), "/usr/local/bin/probelet", "/bin/true"))
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(analyze, "verify", "--man=no", filepath.Join(dir, "probelet-cri-proxy.socket"), filepath.Join(dir, "probelet.service"))
	cmd.Env = append(os.Environ(), "SYSTEMD_LOG_LEVEL=warning")
	if out, err := cmd.CombinedOutput(); err != nil || strings.Contains(string(out), dir) {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
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
