//go:build e2e

package e2e_test

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/testbed"
	"github.com/probelet/probelet/probespec"
)

const launchTimeout = 30 * time.Second

// TestPreinstalledPlugin runs probelet the way deploy/overlays/preinstalled
// installs it: the image's probelet-nri-install puts the image's probelet
// and the overlay's probelet.conf (its paths pointed at the bed) into the
// bed's NRI plugin directories; after a restart containerd launches it
// itself, it registers and synchronizes over NRI, probes a workload (TCP
// answered by the eBPF short-circuit, exec through CRI) and serves probectl
// on its socket. Uninstalling and restarting containerd leaves nothing: no
// process, no file in the plugin directories, no socket, no registration.
func TestPreinstalledPlugin(t *testing.T) {
	t.Parallel()
	archive, _ := probeletImage(t)
	bed := testbed.Start(t)
	tools := t.TempDir()
	installer := imageBinary(t, archive, "probelet-nri-install", tools)
	binary := imageBinary(t, archive, "probelet", tools)
	pl := preinstalled{t: t, bed: bed, installer: installer,
		pluginDir: filepath.Join(bed.Dir(), "nri", "plugins"), confDir: filepath.Join(bed.Dir(), "nri", "conf")}
	socket := filepath.Join(bed.Dir(), "pl.sock")
	metrics := freeLocalAddr(t)

	out := pl.install("--binary", binary, "--config", pl.writeConfig(socket, metrics))
	if !strings.Contains(out, "installed "+pl.plugin()) || !strings.Contains(out, "restart containerd") {
		t.Errorf("installer output:\n%s", out)
	}
	logFrom := pl.restartContainerd()
	pid := pl.waitLaunched(binary)
	waitContainerdLog(t, bed, logFrom, `pre-installed NRI plugin \"10-probelet\" synchronization success`)
	d := &daemon{t: t, bed: bed, socket: "unix://" + socket, metrics: metrics}
	eventually(t, launchTimeout, "/healthz to say NRI is connected", func() (bool, string) {
		code, body := d.healthz()
		return code == http.StatusOK, fmt.Sprintf("%d %s", code, body)
	})
	checkProbesAsPlugin(t, d, bed)

	out = pl.install("--uninstall")
	if !strings.Contains(out, "removed "+pl.plugin()) || !strings.Contains(out, "removed "+pl.config()) {
		t.Errorf("uninstall output:\n%s", out)
	}
	logFrom = pl.restartContainerd()
	eventually(t, launchTimeout, "the plugin to exit with containerd", func() (bool, string) {
		return !testbed.Alive(pid), fmt.Sprintf("pid %d alive", pid)
	})
	pl.checkNothingLeft(socket, metrics, logFrom)
}

// checkProbesAsPlugin runs a workload with a TCP liveness and an exec
// readiness probe and checks the launched probelet's answers on its socket.
func checkProbesAsPlugin(t *testing.T, d *daemon, bed *testbed.Bed) {
	t.Helper()
	a := runApp(t, bed, appSpec{name: "web", cmd: webApp, probes: probespec.ContainerProbes{
		Liveness:  tcpProbe(appPort, 1, 3),
		Readiness: execProbe(1, 3, "cat", indexDoc),
	}})
	waitReady(t, d, a, true, "probelet test bed")
	c := d.describe(a.ctr)
	if l := c.Probes["liveness"]; l.Result != "Success" || l.Method != "ebpf" {
		t.Errorf("liveness %s by %q, want Success by the eBPF short-circuit", l.Result, l.Method)
	}
	if r := c.Probes["readiness"]; r.Method != "exec" {
		t.Errorf("readiness by %q, want exec (through CRI)", r.Method)
	}
	if v, ok := d.sample("probelet_tcp_mode", map[string]string{"mode": "ebpf"}); !ok || v != 1 {
		t.Errorf("probelet_tcp_mode{mode=ebpf} = %v (present %v), want 1", v, ok)
	}
	if out := d.mustProbectl("ps"); !containsLine(out, "web", "true") {
		t.Errorf("probectl ps does not list web as ready:\n%s", out)
	}
}

// preinstalled drives the installer against one bed.
type preinstalled struct {
	t                  *testing.T
	bed                *testbed.Bed
	installer          string
	pluginDir, confDir string
}

func (p preinstalled) plugin() string { return filepath.Join(p.pluginDir, "10-probelet") }
func (p preinstalled) config() string { return filepath.Join(p.confDir, "10-probelet.conf") }

// install runs the installer on the bed's directories with args.
func (p preinstalled) install(args ...string) string {
	p.t.Helper()
	cmd := exec.Command(p.installer, append([]string{"--plugin-dir", p.pluginDir, "--config-dir", p.confDir}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		p.t.Fatalf("probelet-nri-install %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// writeConfig writes deploy/overlays/preinstalled/probelet.conf with its
// socket paths and metrics address pointed at the bed, every other line
// kept, and returns its path.
func (p preinstalled) writeConfig(socket, metrics string) string {
	p.t.Helper()
	shipped, err := os.ReadFile(filepath.Join(repoRoot(), "deploy", "overlays", "preinstalled", "probelet.conf"))
	if err != nil {
		p.t.Fatal(err)
	}
	values := map[string]string{
		"--runtime-endpoint":     p.bed.CRIEndpoint(),
		"--listen":               "unix://" + socket,
		"--metrics-bind-address": metrics,
	}
	var b strings.Builder
	for line := range strings.Lines(string(shipped)) {
		flag, _, _ := strings.Cut(strings.TrimSpace(line), "=")
		if v, ok := values[flag]; ok {
			line = flag + "=" + v + "\n"
			delete(values, flag)
		}
		b.WriteString(line)
	}
	if len(values) > 0 {
		p.t.Fatalf("the shipped probelet.conf no longer sets %v", values)
	}
	path := filepath.Join(p.t.TempDir(), "probelet.conf")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		p.t.Fatal(err)
	}
	return path
}

// restartContainerd restarts the bed's containerd and returns where its
// log continues.
func (p preinstalled) restartContainerd() int64 {
	p.t.Helper()
	from := logSize(p.t, p.bed)
	if err := p.bed.RestartRuntime(); err != nil {
		p.t.Fatal(err)
	}
	return from
}

// logSince is containerd's log from offset on.
func (p preinstalled) logSince(offset int64) string {
	data, err := os.ReadFile(p.bed.LogPath())
	if err != nil || int64(len(data)) < offset {
		return ""
	}
	return string(data[offset:])
}

// waitLaunched waits for the installed plugin to run as a child of the
// bed's containerd, checks it is the image's binary, and returns its PID.
func (p preinstalled) waitLaunched(binary string) int {
	p.t.Helper()
	var pid int
	eventually(p.t, launchTimeout, "containerd to launch "+p.plugin(), func() (bool, string) {
		pid = processRunning(p.plugin())
		return pid != 0, "no such process"
	})
	ppid, err := parentPID(pid)
	cpid, cerr := p.bed.RuntimePID()
	if err != nil || cerr != nil || ppid != cpid {
		p.t.Errorf("plugin pid %d has parent %d (%v), containerd is %d (%v)", pid, ppid, err, cpid, cerr)
	}
	installed, err := os.ReadFile(p.plugin())
	want, werr := os.ReadFile(binary)
	if err != nil || werr != nil || !bytes.Equal(installed, want) {
		p.t.Errorf("%s is not the image's probelet (%v, %v)", p.plugin(), err, werr)
	}
	return pid
}

// checkNothingLeft: after the uninstall and restart, the plugin
// directories are empty, nothing is staged next to them, the socket and
// the metrics listener are gone, and containerd launched no plugin.
func (p preinstalled) checkNothingLeft(socket, metrics string, logFrom int64) {
	p.t.Helper()
	for _, dir := range []string{p.pluginDir, p.confDir} {
		if entries, err := os.ReadDir(dir); err != nil || len(entries) > 0 {
			p.t.Errorf("%s: %v left (%v)", dir, names(entries), err)
		}
	}
	if entries, _ := os.ReadDir(filepath.Dir(p.pluginDir)); len(entries) != 2 {
		p.t.Errorf("%s holds %v, want only plugins and conf (nothing staged)", filepath.Dir(p.pluginDir), names(entries))
	}
	if _, err := os.Stat(socket); err == nil {
		p.t.Errorf("socket %s left behind", socket)
	}
	if c, err := net.DialTimeout("tcp", metrics, time.Second); err == nil {
		c.Close()
		p.t.Errorf("something still listens on %s", metrics)
	}
	if pid := processRunning(p.plugin()); pid != 0 {
		p.t.Errorf("pid %d still runs %s", pid, p.plugin())
	}
	if log := p.logSince(logFrom); strings.Contains(log, "10-probelet") {
		p.t.Errorf("containerd still knows the plugin after the uninstall:\n%s", grepLines(log, "10-probelet"))
	}
}

func names(entries []os.DirEntry) []string {
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

func grepLines(text, s string) string {
	var out []string
	for line := range strings.Lines(text) {
		if strings.Contains(line, s) {
			out = append(out, strings.TrimRight(line, "\n"))
		}
	}
	return strings.Join(out, "\n")
}

// processRunning returns the PID of a live process executing path, 0 if
// there is none.
func processRunning(path string) int {
	procs, _ := filepath.Glob("/proc/[0-9]*/exe")
	for _, exe := range procs {
		if target, err := os.Readlink(exe); err == nil && target == path {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(exe)))
			if testbed.Alive(pid) {
				return pid
			}
		}
	}
	return 0
}

// parentPID reads PPid from /proc/PID/status.
func parentPID(pid int) (int, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "PPid:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, fmt.Errorf("pid %d: no PPid", pid)
}
