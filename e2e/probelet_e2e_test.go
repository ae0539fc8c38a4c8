//go:build e2e

package e2e_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/testbed"
)

const (
	daemonStartTimeout = 20 * time.Second
	daemonStopTimeout  = 15 * time.Second
)

// daemon is one probelet process running against a bed, as users run it:
// the prober, or the CRI proxy (`probelet cri-proxy`).
type daemon struct {
	t       *testing.T
	bed     *testbed.Bed
	name    string   // its log files' prefix
	bin     string   // the binary; "" is probelet
	wrap    []string // a command probelet runs under (setpriv ...), if any
	args    []string
	socket  string // unix:///path
	logPath string
	cmd     *exec.Cmd
	done    chan struct{}
	err     error  // the process's exit, once done is closed
	metrics string // HOST:PORT of /metrics and /healthz
	runs    int
	// synced: the daemon is probelet fed over NRI; ready once it handled
	// the runtime's Synchronize, not only registered.
	synced bool
}

// startProbelet starts probelet against bed with its socket in the bed's
// directory, metrics on a free port and JSON logs, plus extra flags, and
// waits until it is registered with containerd over NRI. The process is
// stopped when the test ends; a failed test shows its log.
func startProbelet(t *testing.T, bed *testbed.Bed, extra ...string) *daemon {
	t.Helper()
	return startProbeletUnder(t, bed, nil, extra...)
}

// startProbeletUnder is startProbelet with probelet run under the command
// wrap (e.g. setpriv with a narrower bounding set).
func startProbeletUnder(t *testing.T, bed *testbed.Bed, wrap []string, extra ...string) *daemon {
	t.Helper()
	d := &daemon{t: t, bed: bed, name: "probelet", wrap: wrap, socket: "unix://" + filepath.Join(bed.Dir(), "pl.sock"), synced: true}
	// PROBELET_E2E_IO runs the suite's agents on that --io (make e2e
	// E2E_IO=std: the libraries' I/O), where a test does not choose.
	if io := os.Getenv("PROBELET_E2E_IO"); io != "" && !slices.Contains(extra, "--io") {
		extra = append([]string{"--io", io}, extra...)
	}
	d.args = append([]string{
		"--nri-socket", bed.NRISocket(),
		"--runtime-endpoint", bed.CRIEndpoint(),
		"--listen", d.socket,
		"--state-dir", filepath.Join(bed.Dir(), "state"),
		"--metrics-bind-address", "127.0.0.1:0",
		"--log-format", "json",
	}, extra...)
	t.Cleanup(d.cleanup)
	d.start()
	return d
}

// start runs the binary once more with the same flags and a new log file,
// and waits until it is registered with containerd over NRI.
func (d *daemon) start() {
	d.t.Helper()
	d.launch()
	d.waitReady()
}

// launch runs the binary once more with the same flags and a new log file.
// It runs in a session of its own, as the agent runs in a pod or a service
// of its own on a node: with autogroup scheduling (on for these machines) a
// session is one scheduling entity, and the test's own work (crictl, the
// soak's driver) would otherwise take its CPU from probelet's share.
func (d *daemon) launch() {
	d.t.Helper()
	d.runs++
	d.logPath = filepath.Join(d.bed.Dir(), fmt.Sprintf("%s-%d.log", d.name, d.runs))
	logFile, err := os.Create(d.logPath)
	if err != nil {
		d.t.Fatal(err)
	}
	defer logFile.Close()
	bin := d.bin
	if bin == "" {
		bin = bins.probelet
	}
	argv := append(append(append([]string{}, d.wrap...), bin), d.args...)
	d.cmd = exec.Command(argv[0], argv[1:]...)
	d.cmd.Stdout, d.cmd.Stderr = logFile, logFile
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := d.cmd.Start(); err != nil {
		d.t.Fatalf("start probelet: %v", err)
	}
	d.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) {
		d.err = cmd.Wait()
		close(done)
	}(d.cmd, d.done)
}

// waitReady waits for the metrics address in the log, then for /healthz to
// say NRI is connected and, for probelet, for the runtime's Synchronize to
// be handled: the runtime sends it after the registration /healthz
// reports, and until then probelet knows none of the running containers
// (on a busy machine, for long enough that a test asking at once is told
// "not found").
func (d *daemon) waitReady() {
	d.t.Helper()
	d.metrics = ""
	eventually(d.t, daemonStartTimeout, d.name+" to serve /healthz (the prober: with NRI connected)", func() (bool, string) {
		if d.exited() {
			return false, fmt.Sprintf("%s exited: %v\n%s", d.name, d.err, d.logTail(20))
		}
		if d.metrics == "" {
			d.metrics = d.logField("Serving /metrics and /healthz", "address")
			return false, "no metrics address in the log yet"
		}
		code, body := d.healthz()
		if code != http.StatusOK {
			return false, fmt.Sprintf("/healthz: %d %s", code, body)
		}
		if d.synced && len(d.logsMatching(msgSynchronized)) == 0 {
			return false, "registered over NRI, the runtime's Synchronize not handled yet"
		}
		return true, ""
	})
}

// msgSynchronized is what probelet logs once it handled Synchronize.
const msgSynchronized = "Synchronized with the runtime"

func (d *daemon) exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// healthz returns /healthz's status code and body (0 when unreachable).
func (d *daemon) healthz() (int, string) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + d.metrics + "/healthz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, strings.TrimSpace(b.String())
}

// stop sends SIGTERM and waits for a clean exit.
func (d *daemon) stop() {
	d.t.Helper()
	if err := d.signal(syscall.SIGTERM); err != nil {
		d.t.Fatal(err)
	}
	if d.err != nil {
		d.t.Fatalf("%s exited with %v after SIGTERM:\n%s", d.name, d.err, d.logTail(20))
	}
}

// kill sends SIGKILL (a crash) and waits for the process to end.
func (d *daemon) kill() {
	d.t.Helper()
	if err := d.signal(syscall.SIGKILL); err != nil {
		d.t.Fatal(err)
	}
}

func (d *daemon) signal(sig syscall.Signal) error {
	if d.exited() {
		return nil
	}
	if err := d.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal probelet: %w", err)
	}
	select {
	case <-d.done:
		return nil
	case <-time.After(daemonStopTimeout):
		// SIGQUIT makes the Go runtime print every goroutine's stack to
		// the log and exit: what the shutdown is stuck on.
		_ = d.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-d.done:
		case <-time.After(5 * time.Second):
			_ = d.cmd.Process.Kill()
			<-d.done
		}
		return fmt.Errorf("probelet still running %v after %v; its goroutines then (SIGQUIT):\n%s", daemonStopTimeout, sig, d.stacks(400))
	}
}

// stacks is up to n lines of the goroutine dump SIGQUIT left in the log.
func (d *daemon) stacks(n int) string {
	data, err := os.ReadFile(d.logPath)
	if err != nil {
		return err.Error()
	}
	_, dump, ok := strings.Cut(string(data), "SIGQUIT: quit")
	if !ok {
		return d.logTail(20)
	}
	lines := strings.Split(dump, "\n")
	return strings.Join(lines[:min(n, len(lines))], "\n")
}

// cleanup stops the daemon when the test ends and shows its log on failure.
func (d *daemon) cleanup() {
	if err := d.signal(syscall.SIGTERM); err != nil {
		d.t.Error(err)
	}
	if d.t.Failed() {
		d.t.Logf("last lines of %s's log %s:\n%s", d.name, d.logPath, d.logTail(60))
	}
}

func (d *daemon) logTail(n int) string {
	data, err := os.ReadFile(d.logPath)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// logEntry is one JSON log line.
type logEntry map[string]any

func (e logEntry) str(key string) string {
	s, _ := e[key].(string)
	return s
}

// logs returns the current run's log lines, JSON-decoded; other lines are
// kept under "msg".
func (d *daemon) logs() []logEntry {
	data, err := os.ReadFile(d.logPath)
	if err != nil {
		d.t.Fatal(err)
	}
	var out []logEntry
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		e := logEntry{}
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			e = logEntry{"msg": sc.Text()}
		}
		out = append(out, e)
	}
	return out
}

// logsMatching returns the log lines whose message contains msg.
func (d *daemon) logsMatching(msg string) []logEntry {
	var out []logEntry
	for _, e := range d.logs() {
		if strings.Contains(e.str("msg"), msg) {
			out = append(out, e)
		}
	}
	return out
}

// logField is field of the last log line whose message contains msg.
func (d *daemon) logField(msg, field string) string {
	m := d.logsMatching(msg)
	if len(m) == 0 {
		return ""
	}
	return fmt.Sprint(m[len(m)-1][field])
}
