package testbed

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	goldenfile "github.com/probelet/probelet/internal/testutil/golden"
	"github.com/probelet/probelet/probespec"
)

func int64p(v int64) *int64 { return &v }

// golden compares v's JSON with testdata/name (golden.Check).
func golden(t *testing.T, name string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	goldenfile.Check(t, filepath.Join("testdata", name), append(got, '\n'))
}

func webPod() PodSpec {
	return PodSpec{
		Name:        "web",
		Annotations: map[string]string{"probelet.io/probes": `{"web":{"readinessProbe":{"httpGet":{"port":"http"}}}}`},
		Labels:      map[string]string{"app": "web"},
		Container: ContainerSpec{
			Name:        "web",
			Command:     []string{"httpd"},
			Args:        []string{"-f", "-p", "8080", "-h", "/var/www"},
			Env:         map[string]string{"B": "2", "A": "1"},
			Ports:       []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
			Annotations: map[string]string{"extra": "x"},
		},
	}.withDefaults(7)
}

func TestPodConfigGolden(t *testing.T) {
	golden(t, "pod.golden.json", buildPodConfig(webPod(), "/tmp/pbt-x/logs/default_web_testbed-default-web-7", "/probelet-testbed-0123456789"))
}

func TestContainerConfigGolden(t *testing.T) {
	p := webPod()
	p.TerminationGracePeriodSeconds = int64p(5)
	cfg, err := buildContainerConfig(p, 2)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "container.golden.json", cfg)
}

// TestSecurityConfigGolden: the security context fields crictl reads, as
// runtime.v1 names them, and a pod user namespace on pod and container.
func TestSecurityConfigGolden(t *testing.T) {
	p := webPod()
	p.Privileged = true
	p.UserNamespace = &UserNamespace{HostID: 200000, Length: 65536}
	p.Container.Security = &SecurityContext{
		RunAsUser: int64p(1000), RunAsGroup: int64p(3000), SupplementalGroups: []int64{4000},
		DropCapabilities: []string{"ALL"}, AddCapabilities: []string{"NET_BIND_SERVICE"},
		NoNewPrivs: true, ReadOnlyRootfs: true, Seccomp: &SeccompProfile{Localhost: "/profiles/deny-mkdir.json"},
	}
	cfg, err := buildContainerConfig(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "container-security.golden.json", cfg.Linux)
	golden(t, "pod-security.golden.json", buildPodConfig(p, "/logs", "/cg").Linux)
}

func TestSecurityValidation(t *testing.T) {
	tests := []struct {
		name string
		edit func(*PodSpec)
		want string
	}{
		{"privileged container, unprivileged pod", func(p *PodSpec) {
			p.Container.Security = &SecurityContext{Privileged: true}
		}, "needs a privileged pod"},
		{"two seccomp profiles", func(p *PodSpec) {
			p.Container.Security = &SecurityContext{Seccomp: &SeccompProfile{RuntimeDefault: true, Localhost: "/p.json"}}
		}, "either RuntimeDefault or Localhost"},
		{"an empty seccomp profile", func(p *PodSpec) { p.Container.Security = &SecurityContext{Seccomp: &SeccompProfile{}} }, "security.seccomp"},
		{"an empty user namespace", func(p *PodSpec) { p.UserNamespace = &UserNamespace{HostID: 1} }, "userNamespace.length"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := webPod()
			tt.edit(&p)
			if err := p.validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("validate = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestContainerConfigCallerAnnotationsWin(t *testing.T) {
	p := webPod()
	p.Container.Ports = nil
	p.Container.Annotations = map[string]string{probespec.AnnotationPodTerminationGracePeriod: "not-a-number"}
	cfg, err := buildContainerConfig(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Annotations[probespec.AnnotationPodTerminationGracePeriod]; got != "not-a-number" {
		t.Errorf("%s = %q, want the caller's value", probespec.AnnotationPodTerminationGracePeriod, got)
	}
	if _, ok := cfg.Annotations[probespec.AnnotationContainerPorts]; ok {
		t.Errorf("%s set for a container without ports", probespec.AnnotationContainerPorts)
	}
	if cfg.Annotations[annotationRestartCount] != "0" || cfg.LogPath != "web/0.log" {
		t.Errorf("attempt 0: restartCount %q, log path %q", cfg.Annotations[annotationRestartCount], cfg.LogPath)
	}
}

func TestWithDefaults(t *testing.T) {
	p := PodSpec{Name: "a", Container: ContainerSpec{Name: "c"}}.withDefaults(3)
	if p.Namespace != "default" || p.UID != "testbed-default-a-3" || p.Container.Image != BusyboxImage || *p.TerminationGracePeriodSeconds != 30 {
		t.Errorf("defaults = %+v", p)
	}
	q := PodSpec{Name: "a", Namespace: "ns", UID: "u", TerminationGracePeriodSeconds: int64p(0), Container: ContainerSpec{Name: "c", Image: "img"}}.withDefaults(3)
	if q.Namespace != "ns" || q.UID != "u" || q.Container.Image != "img" || *q.TerminationGracePeriodSeconds != 0 {
		t.Errorf("explicit values overridden: %+v", q)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		pod  PodSpec
		want string
	}{
		{"ok", PodSpec{Name: "a", Container: ContainerSpec{Name: "c"}}, ""},
		{"no pod name", PodSpec{Container: ContainerSpec{Name: "c"}}, "testbed: pod name is empty"},
		{"no container name", PodSpec{Name: "a"}, "testbed: pod default/a: container name is empty"},
		{"negative grace", PodSpec{Name: "a", TerminationGracePeriodSeconds: int64p(-1), Container: ContainerSpec{Name: "c"}},
			"testbed: pod default/a: terminationGracePeriodSeconds -1 is negative"},
		{"port 0", PodSpec{Name: "a", Container: ContainerSpec{Name: "c", Ports: []corev1.ContainerPort{{ContainerPort: 80}, {}}}},
			"testbed: pod default/a container c: ports[1].containerPort 0 is not in 1-65535"},
		{"port too big", PodSpec{Name: "a", Container: ContainerSpec{Name: "c", Ports: []corev1.ContainerPort{{ContainerPort: 70000}}}},
			"testbed: pod default/a container c: ports[0].containerPort 70000 is not in 1-65535"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.pod.withDefaults(1).validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("validate() = %q, want %q", got, tc.want)
			}
		})
	}
}
