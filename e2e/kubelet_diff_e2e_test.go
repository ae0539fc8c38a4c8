//go:build e2e

package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/probelet/probelet/internal/testbed"
	"github.com/probelet/probelet/probespec/convert"
)

// diffWindow is how long both pods of a row run before they are compared:
// long enough for each row's probes to act (the slowest row kills at about
// 10 s) and for a kubelet restart or two after it. diffBatch rows run at
// once: all 29 (58 pods) on two cores made both probers' execs time out
// at random.
const (
	diffWindow = 35 * time.Second
	diffBatch  = 10
)

// diffApp is every row's app: a web server with the scripts the rows'
// probes and hooks ask (a 500, a slow answer, a redirect away, a drain
// that writes markers), a server that accepts and never answers (8081),
// and PID 1 logging its start and the SIGTERM it ignores to the pod's
// data directory (/data/log), which outlives the container and the pod.
const diffApp = `trap 'echo "TERM $(date +%s)" >> /data/log; ` + "${ON_TERM:-:}" + `' TERM
echo "start $(date +%s)" >> /data/log
mkdir -p /www/cgi-bin
cat > /www/cgi-bin/fail <<'EOF'
#!/bin/sh
printf 'Status: 500 Internal Server Error\r\nContent-Type: text/plain\r\n\r\nbroken\n'
EOF
cat > /www/cgi-bin/slow <<'EOF'
#!/bin/sh
sleep 3
printf 'Content-Type: text/plain\r\n\r\nslow\n'
EOF
cat > /www/cgi-bin/away <<'EOF'
#!/bin/sh
printf 'Status: 302 Found\r\nLocation: http://away.invalid/\r\n\r\n'
EOF
cat > /www/cgi-bin/drain <<'EOF'
#!/bin/sh
echo "hook-start $(date +%s)" >> /data/log
sleep 3
echo "hook-end $(date +%s)" >> /data/log
printf 'Content-Type: text/plain\r\n\r\ndrained\n'
EOF
chmod +x /www/cgi-bin/*
echo ok > /www/ready
httpd -p 8080 -h /www
touch /tmp/serving
nc -ll -p 8081 -e sleep 3600 &
(sleep 4; touch /tmp/started) &
while true; do sleep 3600 & wait $!; done
`

// drainHook writes the markers the httpGet drain does, by exec.
var drainHook = []string{"sh", "-c", `echo "hook-start $(date +%s)" >> /data/log; sleep 3; echo "hook-end $(date +%s)" >> /data/log`}

// diffRow is one pod spec run under both: the kubelet's own probes, and
// the same pod converted to probelet.
type diffRow struct {
	name string
	// spec changes the base pod (one container "app" running diffApp).
	spec func(*corev1.PodSpec)
	// known is a difference listed in the README and KUBELET_RULES.md,
	// with its reason; the row then reports it instead of failing.
	known string
}

func appOf(p *corev1.PodSpec) *corev1.Container { return &p.Containers[0] }

func httpGet(path string, port intstr.IntOrString) corev1.ProbeHandler {
	return corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: port}}
}

func execHandler(cmd ...string) corev1.ProbeHandler {
	return corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: cmd}}
}

// serverUp is the initial delay of probes that need the app's servers: on
// a loaded node the script takes seconds to start them, and a failure
// before is a race of the row, not a difference.
const serverUp = 6

// probeOf is a probe with the rows' defaults: every 2 s, one failure or
// success decides, a 3 s timeout (a 1 s one times execs out at random on
// a loaded two-core node, under either prober: rows about timeouts set
// theirs).
func probeOf(h corev1.ProbeHandler, mutate ...func(*corev1.Probe)) *corev1.Probe {
	p := &corev1.Probe{ProbeHandler: h, PeriodSeconds: 2, FailureThreshold: 1, SuccessThreshold: 1, TimeoutSeconds: 3}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func delay(s int32) func(*corev1.Probe)     { return func(p *corev1.Probe) { p.InitialDelaySeconds = s } }
func failures(n int32) func(*corev1.Probe)  { return func(p *corev1.Probe) { p.FailureThreshold = n } }
func successes(n int32) func(*corev1.Probe) { return func(p *corev1.Probe) { p.SuccessThreshold = n } }
func period(s int32) func(*corev1.Probe)    { return func(p *corev1.Probe) { p.PeriodSeconds = s } }
func timeout(s int32) func(*corev1.Probe)   { return func(p *corev1.Probe) { p.TimeoutSeconds = s } }

// neverRestart makes a row's kill its only one: its timing and the
// container's end are then read once.
func neverRestart(p *corev1.PodSpec) { p.RestartPolicy = corev1.RestartPolicyNever }

// withHook gives the app a preStop hook, a grace of 10 s, and one kill (a
// liveness exec that fails from 3 s on).
func withHook(h *corev1.LifecycleHandler) func(*corev1.PodSpec) {
	return func(p *corev1.PodSpec) {
		neverRestart(p)
		p.TerminationGracePeriodSeconds = ptr[int64](10)
		appOf(p).Lifecycle = &corev1.Lifecycle{PreStop: h}
		// Fails once the web server is up, not before: an httpGet hook
		// sent before it listens fails under both, by the node's load.
		appOf(p).LivenessProbe = probeOf(execHandler("sh", "-c", "test ! -e /tmp/serving"), delay(3))
	}
}

var port8080, portHTTP = intstr.FromInt32(8080), intstr.FromString("http")

func diffRows() []diffRow {
	return []diffRow{
		{name: "http-ready", spec: func(p *corev1.PodSpec) {
			appOf(p).ReadinessProbe = probeOf(httpGet("/ready", port8080), delay(serverUp))
		}},
		{name: "http-404", spec: func(p *corev1.PodSpec) {
			appOf(p).ReadinessProbe = probeOf(httpGet("/missing", port8080), delay(serverUp))
		}},
		{name: "http-500-liveness", spec: func(p *corev1.PodSpec) {
			appOf(p).LivenessProbe = probeOf(httpGet("/cgi-bin/fail", port8080), delay(serverUp), failures(2))
		}},
		{name: "http-named-port", spec: func(p *corev1.PodSpec) {
			appOf(p).LivenessProbe = probeOf(httpGet("/ready", portHTTP), delay(serverUp))
		}},
		{name: "http-slow-timeout", spec: func(p *corev1.PodSpec) {
			appOf(p).ReadinessProbe = probeOf(httpGet("/cgi-bin/slow", port8080), delay(serverUp), period(3), timeout(1))
		}},
		{name: "http-redirect-away", spec: func(p *corev1.PodSpec) {
			appOf(p).ReadinessProbe = probeOf(httpGet("/cgi-bin/away", port8080), delay(serverUp))
		}},
		{name: "http-hanging-app", spec: func(p *corev1.PodSpec) {
			appOf(p).LivenessProbe = probeOf(httpGet("/", intstr.FromInt32(8081)), delay(serverUp), timeout(1), failures(2))
		}},
		{name: "tcp-ready", spec: func(p *corev1.PodSpec) {
			appOf(p).ReadinessProbe = probeOf(corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: port8080}}, delay(serverUp))
		}},
		{name: "tcp-refused-liveness", spec: func(p *corev1.PodSpec) {
			appOf(p).LivenessProbe = probeOf(corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(9999)}}, delay(2), failures(2))
		}},
		{name: "exec-ready", spec: func(p *corev1.PodSpec) { appOf(p).ReadinessProbe = probeOf(execHandler("true")) }},
		{name: "exec-failing-output", spec: func(p *corev1.PodSpec) {
			appOf(p).LivenessProbe = probeOf(execHandler("sh", "-c", "echo broken; exit 3"), delay(2), failures(2))
		}},
		{name: "exec-timeout", spec: func(p *corev1.PodSpec) {
			appOf(p).LivenessProbe = probeOf(execHandler("sleep", "5"), delay(2), timeout(1), failures(2))
		}},
		{name: "exec-large-output", spec: func(p *corev1.PodSpec) {
			appOf(p).ReadinessProbe = probeOf(execHandler("sh", "-c", "yes 0123456789 | head -c 20000; exit 1"), period(2), timeout(10))
		}},
		{name: "grpc-refused", spec: func(p *corev1.PodSpec) {
			appOf(p).LivenessProbe = probeOf(corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9999}}, delay(2), timeout(1), failures(2))
		}},
		{name: "startup-gates", spec: func(p *corev1.PodSpec) {
			appOf(p).StartupProbe = probeOf(execHandler("test", "-f", "/tmp/started"), failures(20))
			appOf(p).ReadinessProbe = probeOf(execHandler("true"))
		}},
		{name: "startup-kills", spec: func(p *corev1.PodSpec) {
			appOf(p).StartupProbe = probeOf(execHandler("false"), failures(3))
		}},
		{name: "success-threshold", spec: func(p *corev1.PodSpec) {
			appOf(p).ReadinessProbe = probeOf(execHandler("true"), successes(3))
		}},
		{name: "restart-never", spec: func(p *corev1.PodSpec) {
			neverRestart(p)
			appOf(p).LivenessProbe = probeOf(execHandler("false"), delay(2))
		}},
		{name: "restart-onfailure-exit-0", known: "the kubelet restarts a container it killed even when it exits 0 under OnFailure (it queues the start with the kill); after probelet's kill it sees a successful exit and does not", spec: func(p *corev1.PodSpec) {
			p.RestartPolicy = corev1.RestartPolicyOnFailure
			appOf(p).Env = []corev1.EnvVar{{Name: "ON_TERM", Value: "exit 0"}}
			appOf(p).LivenessProbe = probeOf(execHandler("false"), delay(2))
		}},
		{name: "init-then-ready", spec: func(p *corev1.PodSpec) {
			p.InitContainers = []corev1.Container{{Name: "init", Image: testbed.BusyboxImage, ImagePullPolicy: corev1.PullNever,
				Command: shell("sleep 3")}}
			appOf(p).ReadinessProbe = probeOf(execHandler("true"))
		}},
		{name: "sidecar-liveness", spec: func(p *corev1.PodSpec) {
			p.InitContainers = []corev1.Container{{Name: "side", Image: testbed.BusyboxImage, ImagePullPolicy: corev1.PullNever,
				RestartPolicy: ptr(corev1.ContainerRestartPolicyAlways), Command: shell("sleep 3600"),
				LivenessProbe: probeOf(execHandler("false"), delay(2), failures(2))}}
		}},
		{name: "sidecar-readiness", spec: func(p *corev1.PodSpec) {
			p.InitContainers = []corev1.Container{{Name: "side", Image: testbed.BusyboxImage, ImagePullPolicy: corev1.PullNever,
				RestartPolicy: ptr(corev1.ContainerRestartPolicyAlways), Command: shell("sleep 3600"),
				ReadinessProbe: probeOf(execHandler("test", "-f", "/nope"), period(2))}}
		}},
		{name: "probe-level-grace", spec: func(p *corev1.PodSpec) {
			neverRestart(p)
			p.TerminationGracePeriodSeconds = ptr[int64](30)
			appOf(p).LivenessProbe = probeOf(execHandler("false"), delay(2), func(p *corev1.Probe) { p.TerminationGracePeriodSeconds = ptr[int64](3) })
		}},
		{name: "prestop-exec", spec: withHook(&corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: drainHook}})},
		{name: "prestop-http", spec: withHook(&corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/cgi-bin/drain", Port: port8080}})},
		{name: "prestop-sleep", spec: withHook(&corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 3}})},
		{name: "prestop-exec-fails", spec: withHook(&corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "exit 1"}}})},
		{name: "prestop-http-refused", spec: withHook(&corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(9999)}})},
		{name: "liveness-steady", spec: func(p *corev1.PodSpec) { appOf(p).LivenessProbe = probeOf(execHandler("true")) }},
	}
}

// diffPod is the row's pod: the app with its data directory, a 2 s
// grace. The directory is on the node (a hostPath under dataDir), not an
// emptyDir: the kubelet removes a terminated pod's emptyDir, and a row
// that kills once ends its pod.
func (n *clusterNode) diffPod(r diffRow, name, dataDir string) *corev1.Pod {
	p := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"row": r.name}},
		Spec: corev1.PodSpec{
			NodeName:                      n.k.NodeName(),
			TerminationGracePeriodSeconds: ptr[int64](2),
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
				Path: filepath.Join(dataDir, name), Type: ptr(corev1.HostPathDirectoryOrCreate)}}}},
			Containers: []corev1.Container{{Name: "app", Image: testbed.BusyboxImage, ImagePullPolicy: corev1.PullNever,
				Command: shell(diffApp), Ports: httpPort}},
		},
	}
	r.spec(&p.Spec)
	mount := []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	for i := range p.Spec.InitContainers {
		p.Spec.InitContainers[i].VolumeMounts = mount
	}
	for i := range p.Spec.Containers {
		p.Spec.Containers[i].VolumeMounts = mount
	}
	return p
}

// convertPod is pod converted to probelet as the webhook converts it.
func convertPod(t *testing.T, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	in, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	res, errs := convert.Convert(in)
	if len(errs) > 0 {
		t.Fatalf("convert %s: %v", pod.Name, errs)
	}
	out := &corev1.Pod{}
	if err := yaml.Unmarshal(res.Output, out); err != nil {
		t.Fatalf("converted %s: %v", pod.Name, err)
	}
	return out
}

// diffObserved is what a pod did in the window, in the terms compared.
type diffObserved struct {
	events   []string // "reason fieldPath: message ×count", IPs blanked
	counts   map[string]int32
	restarts string // per container
	ended    string // the last termination of each container: reason, exit code
	readyAt  int    // seconds from the first start to Ready; never: not Ready
	killAt   int    // seconds from the first start to the first Killing; never: none
	markers  string // the first kill's hook markers and its SIGTERM, in order
	// conditions are the pod's at the end (shown, not compared: the gate
	// is probelet's alone).
	conditions []string
	stopTook   int // seconds from the SIGTERM to the container's end, -1: unknown
}

// never marks a time that did not come.
const never = -1 << 31

var ipPattern = regexp.MustCompile(`\d+\.\d+\.\d+\.\d+`)

// probeEventReasons are the Events of probing and its kills.
var probeEventReasons = map[string]bool{"Unhealthy": true, "ProbeWarning": true, "Killing": true,
	"FailedPreStopHook": true, "LifecycleHTTPFallback": true}

func (n *clusterNode) observe(t *testing.T, dataDir, name string) diffObserved {
	t.Helper()
	ctx := context.Background()
	pod := n.pod(name)
	o := diffObserved{counts: map[string]int32{}, readyAt: never, killAt: never, stopTook: never}
	log := dataLog(dataDir, name)
	start, term := logTime(log, "start"), logTime(log, "TERM")
	// The markers of the first kill: its hook's, up to its SIGTERM (the
	// restarts that follow are compared as counts).
	var marks []string
	for _, l := range log {
		if f := strings.Fields(l); len(f) > 0 && f[0] != "start" {
			marks = append(marks, f[0])
			if f[0] == "TERM" {
				break
			}
		}
	}
	o.markers = strings.Join(marks, ",")
	evs, err := n.admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	var firstKill time.Time
	for _, e := range evs.Items {
		if !probeEventReasons[e.Reason] {
			continue
		}
		key := fmt.Sprintf("%s %s %s: %q", e.Type, e.Reason, e.InvolvedObject.FieldPath, ipPattern.ReplaceAllString(e.Message, "<ip>"))
		o.counts[key] += max(e.Count, 1)
		if e.Reason == "Killing" && (firstKill.IsZero() || e.FirstTimestamp.Time.Before(firstKill)) {
			firstKill = e.FirstTimestamp.Time
		}
	}
	for k, c := range o.counts {
		o.events = append(o.events, fmt.Sprintf("%s ×%d", k, c))
	}
	sort.Strings(o.events)
	var restarts, ended []string
	for _, cs := range append(append([]corev1.ContainerStatus(nil), pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		restarts = append(restarts, fmt.Sprintf("%s=%d", cs.Name, cs.RestartCount))
		term := cs.State.Terminated
		if term == nil {
			term = cs.LastTerminationState.Terminated
		}
		if term != nil && cs.Name != "init" {
			ended = append(ended, fmt.Sprintf("%s=%s/%d", cs.Name, term.Reason, term.ExitCode))
			if cs.Name == "app" && !start.IsZero() && !termTime(term).IsZero() {
				o.stopTook = int(termTime(term).Sub(lastTermBefore(log, termTime(term))).Seconds())
			}
		}
	}
	o.restarts, o.ended = strings.Join(restarts, " "), strings.Join(ended, " ")
	// Ready is compared where it changed once: a restart moves it again.
	restarted := len(ended) > 0
	if c, ok := condition(pod, corev1.PodReady); ok && c.Status == corev1.ConditionTrue && !start.IsZero() && !restarted {
		o.readyAt = int(c.LastTransitionTime.Sub(start).Seconds())
	}
	if !firstKill.IsZero() && !start.IsZero() {
		o.killAt = int(firstKill.Sub(start).Seconds())
	}
	if term.IsZero() || o.stopTook > 1000 {
		o.stopTook = never // no SIGTERM logged: killed before the app ran
	}
	for _, t := range []corev1.PodConditionType{corev1.ContainersReady, readyGate, corev1.PodReady} {
		c, _ := condition(pod, t)
		o.conditions = append(o.conditions, fmt.Sprintf("%s=%s", t, c.Status))
	}
	return o
}

func termTime(t *corev1.ContainerStateTerminated) time.Time { return t.FinishedAt.Time }

// dataLog is the lines of the pod's /data/log, read on the node (the
// container may not run to be asked).
func dataLog(dataDir, name string) []string {
	b, err := os.ReadFile(filepath.Join(dataDir, name, "log"))
	if err != nil {
		return nil
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// lastTermBefore is the time of the last SIGTERM logged at or before end
// (the one the ended instance got); zero when none was.
func lastTermBefore(log []string, end time.Time) time.Time {
	var last time.Time
	for _, l := range log {
		f := strings.Fields(l)
		if len(f) != 2 || f[0] != "TERM" {
			continue
		}
		if s, err := strconv.ParseInt(f[1], 10, 64); err == nil && !time.Unix(s, 0).After(end) {
			last = time.Unix(s, 0)
		}
	}
	return last
}

// logTime is the time on the first line of the log starting with word.
func logTime(log []string, word string) time.Time {
	for _, l := range log {
		f := strings.Fields(l)
		if len(f) == 2 && f[0] == word {
			if s, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				return time.Unix(s, 0)
			}
		}
	}
	return time.Time{}
}

// diffs lists how p (probelet) differs from k (the kubelet) beyond what
// two runs of one pod differ by: event counts within 2 and 15%, restarts
// within one, times within one probe period and a second of the API's
// rounding (tol: 2 s periods, 1 s rounding).
func diffs(k, p diffObserved, tol int) []string {
	var out []string
	pCycles := restartSum(p.restarts) + 1
	extraCycles := max(0, restartSum(k.restarts)-restartSum(p.restarts))
	keys := map[string]bool{}
	for key := range k.counts {
		keys[key] = true
	}
	for key := range p.counts {
		keys[key] = true
	}
	for key := range keys {
		a, b := k.counts[key], p.counts[key]
		if a >= spamBudget && b >= spamBudget {
			continue // both at their recorder's spam filter: see spamBudget
		}
		if (a == 0 || b == 0) && startRace(key, a+b) {
			continue
		}
		if a == 0 || b == 0 {
			out = append(out, fmt.Sprintf("event %s: kubelet ×%d, probelet ×%d", key, a, b))
			continue
		}
		tol := 3
		if perKill(key) {
			// The kubelet's extra kill cycles (its back-off step,
			// closeRestarts) bring their own failures and Killing Event,
			// at probelet's rate per cycle.
			tol += extraCycles * int(math.Ceil(float64(b)/float64(pCycles)))
		}
		if d := abs(int(a - b)); d > tol && float64(d) > 0.15*float64(max(a, b)) {
			out = append(out, fmt.Sprintf("event count %s: kubelet ×%d, probelet ×%d", key, a, b))
		}
	}
	if !closeRestarts(k.restarts, p.restarts) {
		out = append(out, fmt.Sprintf("restarts: kubelet %s, probelet %s", k.restarts, p.restarts))
	}
	if k.ended != p.ended {
		out = append(out, fmt.Sprintf("last termination: kubelet %q, probelet %q", k.ended, p.ended))
	}
	for _, c := range []struct {
		what string
		a, b int
		tol  int
	}{{"ready at", k.readyAt, p.readyAt, readyTol}, {"first kill at", k.killAt, p.killAt, tol}, {"stop took", k.stopTook, p.stopTook, tol}} {
		if (c.a == never) != (c.b == never) || abs(c.a-c.b) > c.tol {
			out = append(out, fmt.Sprintf("%s: kubelet %ds, probelet %ds", c.what, c.a, c.b))
		}
	}
	if k.markers != p.markers {
		out = append(out, fmt.Sprintf("hook markers: kubelet %q, probelet %q", k.markers, p.markers))
	}
	sort.Strings(out)
	return out
}

// startRace reports whether an Event seen by one side only is the race
// of the first probes with the app's (re)start: a failure, at most twice,
// because the server was not listening yet (the kubelet's first probe
// comes at its worker's first tick after the start, probelet's at the
// start; both within the period, and the script's start takes seconds on
// a loaded node).
func startRace(key string, n int32) bool {
	return n <= 2 && strings.Contains(key, "probe failed") && strings.Contains(key, "connection refused")
}

// readyTol is how far the pods' Ready times may be apart: a period, and
// the status's way to the API server — the kubelet's status manager for
// its own probes, probelet's condition write and then the kubelet's
// reconcile for probelet's — which takes seconds on a loaded node.
const readyTol = 5

// spamBudget is where event counts stop being compared: the recorders'
// spam filter (client-go's, kept by probelet) lets 25 Events of one type
// per pod and source through, then one per 5 minutes, and the kubelet's
// bucket of a pod it probes is shared with its own container Events
// (Pulled, Created, Started, BackOff), probelet's only with probe Events.
const spamBudget = 15

// closeRestarts compares "name=n ..." lists: the kubelet's count may be
// one below probelet's and up to two above it (one, when probelet's is 0).
// Above by one more than the
// timing's one: after its own liveness kill the kubelet starts the
// container again in the same sync, with no exited instance to back off
// from, so the first kill costs it no back-off step; after probelet's
// StopContainer it sees an exit and steps its back-off (10 s, 20 s, ...)
// at the first restart already (kuberuntime doBackOff). A container killed
// over and over is restarted one time fewer in its first minutes under
// probelet (README "Where probelet differs").
func closeRestarts(kubelet, probelet string) bool {
	fa, fb := strings.Fields(kubelet), strings.Fields(probelet)
	if len(fa) != len(fb) {
		return false
	}
	for i := range fa {
		na, ca, _ := strings.Cut(fa[i], "=")
		nb, cb, _ := strings.Cut(fb[i], "=")
		x, _ := strconv.Atoi(ca)
		y, _ := strconv.Atoi(cb)
		// The back-off step is a crash loop's: with no restart under
		// probelet there is none to be one step behind (the OnFailure row).
		step := 1
		if y > 0 {
			step = 2
		}
		if na != nb || x-y < -1 || x-y > step {
			return false
		}
	}
	return true
}

// restartSum adds the counts of a "name=n ..." list.
func restartSum(list string) int {
	sum := 0
	for _, f := range strings.Fields(list) {
		_, c, _ := strings.Cut(f, "=")
		n, _ := strconv.Atoi(c)
		sum += n
	}
	return sum
}

// perKill reports whether an Event comes with each kill cycle: the kill's
// own, and the liveness or startup failures that led to it.
func perKill(key string) bool {
	return strings.Contains(key, " Killing ") || strings.Contains(key, "Liveness probe failed") || strings.Contains(key, "Startup probe failed")
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// TestKubeletDifferential runs every row's pod twice on one node of a real
// cluster — with the kubelet's own probes, and converted to probelet as
// the webhook converts it — for the same window, and compares what a user
// sees: the probe Events (type, reason, field path, message with the pod
// IP blanked, count), restart counts, each container's last termination
// (reason, exit code), when the pod became Ready and when the first kill
// came (from the container's first start), what a preStop hook did (its
// markers in the pod's data directory, before the SIGTERM) and how long the stop
// then took. A row differs only where it is listed (known, with its
// reason, in the README and KUBELET_RULES.md).
func TestKubeletDifferential(t *testing.T) {
	t.Parallel()
	// The kill guard is probelet's own (README "Kill guard"): off, kills
	// go as the kubelet's do, which is what is compared.
	n := startClusterNode(t, "--kill-guard", "off")
	rows := diffRows()
	dataDir := t.TempDir()
	var table, details strings.Builder
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "row\tkubelet\tprobelet\tsame?")
	failed := 0
	for first := 0; first < len(rows); first += diffBatch {
		batch := rows[first:min(first+diffBatch, len(rows))]
		for _, r := range batch {
			n.create(n.diffPod(r, r.name+"-k", dataDir))
			n.create(convertPod(t, n.diffPod(r, r.name+"-p", dataDir)))
		}
		for _, r := range batch {
			n.waitStarted(r.name + "-k")
			n.waitStarted(r.name + "-p")
		}
		// From the last start: on a loaded node a batch's pods start
		// seconds apart, and each row needs the whole window.
		time.Sleep(diffWindow)
		for _, r := range batch {
			k, p := n.observe(t, dataDir, r.name+"-k"), n.observe(t, dataDir, r.name+"-p")
			d := diffs(k, p, 3)
			verdict := "same"
			switch {
			case len(d) > 0 && r.known != "":
				verdict = "different, listed: " + r.known
			case len(d) > 0:
				verdict = "DIFFERENT"
				failed++
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.name, k.short(), p.short(), verdict)
			fmt.Fprintf(&details, "%s (%s)\n  kubelet:  %s [%s]\n  probelet: %s [%s]\n", r.name, verdict,
				strings.Join(k.events, " | "), strings.Join(k.conditions, " "), strings.Join(p.events, " | "), strings.Join(p.conditions, " "))
			for _, x := range d {
				fmt.Fprintf(&details, "  differs: %s\n", x)
			}
		}
		n.deleteBatch(batch)
	}
	tw.Flush()
	out := table.String() + "\n" + details.String()
	t.Logf("the differential table (%d rows in batches of %d, each run %v):\n%s", len(rows), diffBatch, diffWindow, out)
	if dir := os.Getenv("PROBELET_DIFF_OUT"); dir != "" {
		_ = os.WriteFile(filepath.Join(dir, "kubelet-diff.txt"), []byte(out), 0o644)
	}
	if failed > 0 {
		t.Errorf("%d of %d rows differ from the kubelet", failed, len(rows))
	}
}

// deleteBatch removes a batch's pods at once, so the next batch runs on a
// quiet node.
func (n *clusterNode) deleteBatch(batch []diffRow) {
	n.t.Helper()
	ctx := context.Background()
	zero := int64(0)
	for _, r := range batch {
		for _, name := range []string{r.name + "-k", r.name + "-p"} {
			if err := n.admin.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
				n.t.Fatalf("delete %s: %v", name, err)
			}
		}
	}
}

// waitStarted waits until the pod's app container has started (it may
// have ended since: a row that kills once).
func (n *clusterNode) waitStarted(name string) {
	n.t.Helper()
	eventually(n.t, 90*time.Second, "pod "+name+" to start", func() (bool, string) {
		p := n.pod(name)
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == "app" && (cs.State.Running != nil || cs.State.Terminated != nil || cs.RestartCount > 0) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("phase %s", p.Status.Phase)
	})
}

// short is one side of a row in the table.
func (o diffObserved) short() string {
	return fmt.Sprintf("restarts %s, ended %s, ready@%s kill@%s stop %s, marks %s, %d events",
		o.restarts, orNone(o.ended), secs(o.readyAt), secs(o.killAt), secs(o.stopTook), orNone(o.markers), len(o.events))
}

func secs(n int) string {
	if n == never {
		return "-"
	}
	return strconv.Itoa(n) + "s"
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
