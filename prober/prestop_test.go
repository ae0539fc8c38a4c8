package prober_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/probespec"
)

// The kill carries the container's preStop hook as the kubelet's
// killContainer finds it — the pod spec's, else the annotation the kubelet
// wrote — resolved against the pod under the probes' host rule, with the
// grace before the 2 s floor; none when the grace is 0.
func TestAKillCarriesThePreStopHook(t *testing.T) {
	ports := `[{"name":"http","containerPort":8080,"protocol":"TCP"}]`
	tests := []struct {
		name       string
		annotation string // the kubelet's io.kubernetes.container.preStopHandler
		spec       *corev1.LifecycleHandler
		podGrace   *int64
		probeGrace *int64
		want       *prober.Hook // Err compared by its text's start
		wantErr    string
	}{
		{name: "no hook"},
		{name: "exec from the annotation", annotation: `{"exec":{"command":["sh","-c","echo $(X) > /drain"]}}`,
			want: &prober.Hook{Kind: prober.HookExec, Command: []string{"sh", "-c", "echo $(X) > /drain"}, Grace: 30 * time.Second}},
		{name: "the pod spec wins over the annotation", annotation: `{"exec":{"command":["old"]}}`,
			spec: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 4}},
			want: &prober.Hook{Kind: prober.HookSleep, Sleep: 4 * time.Second, Grace: 30 * time.Second}},
		{name: "httpGet to the pod by a named port", annotation: `{"httpGet":{"path":"/drain","port":"http","scheme":"HTTP"}}`,
			want: &prober.Hook{Kind: prober.HookHTTP, Grace: 30 * time.Second}},
		{name: "httpGet to another host is not dialed", annotation: `{"httpGet":{"host":"10.9.9.9","path":"/","port":80}}`,
			want: &prober.Hook{Kind: prober.HookHTTP, Grace: 30 * time.Second}, wantErr: `probe host "10.9.9.9" is not dialed`},
		{name: "httpGet by a port name the container lacks", annotation: `{"httpGet":{"path":"/","port":"admin"}}`,
			want: &prober.Hook{Kind: prober.HookHTTP, Grace: 30 * time.Second}, wantErr: `container "app"`},
		{name: "tcpSocket is accepted and fails", annotation: `{"tcpSocket":{"port":80}}`,
			want: &prober.Hook{Grace: 30 * time.Second}, wantErr: "invalid handler: tcpSocket"},
		{name: "the probe's grace bounds it", annotation: `{"sleep":{"seconds":9}}`, probeGrace: ptr.To[int64](5),
			want: &prober.Hook{Kind: prober.HookSleep, Sleep: 9 * time.Second, Grace: 5 * time.Second}},
		{name: "a pod grace of 0 runs none", annotation: `{"sleep":{"seconds":1}}`, podGrace: ptr.To[int64](0)},
		{name: "an unreadable annotation runs none", annotation: `{"exec":`},
		{name: "a handler with two actions runs none", annotation: `{"exec":{"command":["a"]},"sleep":{"seconds":1}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			p := failingLiveness(h, func(p *corev1.Probe) { p.TerminationGracePeriodSeconds = tc.probeGrace })
			pod := testPod("c1", probespec.ContainerProbes{Liveness: p})
			pod.TerminationGracePeriodSeconds = tc.podGrace
			pod.Containers[0].Annotations = map[string]string{probespec.AnnotationContainerPorts: ports}
			if tc.annotation != "" {
				pod.Containers[0].Annotations[probespec.AnnotationPreStopHandler] = tc.annotation
			}
			if tc.spec != nil {
				pod.API = &node.APIPod{Spec: &corev1.PodSpec{Containers: []corev1.Container{{Name: "app",
					Lifecycle: &corev1.Lifecycle{PreStop: tc.spec}}}}}
			}
			h.update(pod)
			h.killer.mu.Lock()
			hooks := h.killer.preStops
			h.killer.mu.Unlock()
			if len(hooks) != 1 {
				t.Fatalf("%d kills, want 1", len(hooks))
			}
			got := hooks[0]
			switch {
			case tc.want == nil && got != nil:
				t.Fatalf("hook %+v, want none", got)
			case tc.want == nil:
				return
			case got == nil:
				t.Fatalf("no hook, want %+v", tc.want)
			}
			if got.Kind != tc.want.Kind || got.Grace != tc.want.Grace || got.Sleep != tc.want.Sleep ||
				strings.Join(got.Command, " ") != strings.Join(tc.want.Command, " ") {
				t.Errorf("hook %+v, want %+v", got, tc.want)
			}
			switch {
			case tc.wantErr == "" && got.Err != nil:
				t.Errorf("hook error %v, want none", got.Err)
			case tc.wantErr != "" && (got.Err == nil || !strings.Contains(got.Err.Error(), tc.wantErr)):
				t.Errorf("hook error %v, want one saying %q", got.Err, tc.wantErr)
			}
			if tc.name == "httpGet to the pod by a named port" &&
				(got.HTTP.Host != "10.0.0.5" || got.HTTP.Port != 8080 || got.HTTP.Path != "/drain") {
				t.Errorf("target %+v, want the pod's IP, port 8080, /drain", got.HTTP)
			}
		})
	}
}

// A failed hook is the kubelet's Warning FailedPreStopHook on the
// container, without the error's text; an HTTPS hook that fell back to
// HTTP is its Warning LifecycleHTTPFallback on the pod.
func TestPreStopHookEvents(t *testing.T) {
	tests := []struct {
		name string
		hook prober.HookResult
		want []prober.Event // Type, Reason, Message, ContainerName compared
	}{
		{"success says nothing", prober.HookResult{}, nil},
		{"failure", prober.HookResult{Err: errors.New("exec lifecycle hook (drain) exited with 1, output \"token=s3cret\"")},
			[]prober.Event{{Type: "Warning", Reason: "FailedPreStopHook", Message: "PreStopHook failed", ContainerName: "app"}}},
		{"fallback to HTTP", prober.HookResult{FellBackToHTTP: "10.0.0.5:8443"},
			[]prober.Event{{Type: "Warning", Reason: "LifecycleHTTPFallback",
				Message: "request to HTTPS lifecycle hook 10.0.0.5:8443 got HTTP response, retry with HTTP succeeded"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.killer.hook = &tc.hook
			pod := testPod("c1", probespec.ContainerProbes{Liveness: failingLiveness(h)})
			pod.Containers[0].Annotations = map[string]string{probespec.AnnotationPreStopHandler: `{"exec":{"command":["drain"]}}`}
			h.update(pod)
			var got []prober.Event
			for _, e := range h.drainEvents() {
				if e.Reason != "Killing" && e.Reason != "Unhealthy" {
					got = append(got, prober.Event{Type: e.Type, Reason: e.Reason, Message: e.Message, ContainerName: e.ContainerName})
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("events %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("event %+v, want %+v", got[i], tc.want[i])
				}
			}
		})
	}
}
