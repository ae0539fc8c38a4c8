package prober

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/probelet/probelet/node"
)

// The kubelet's podutil.ContainerShouldRestart, rule by rule.
func TestWillRestart(t *testing.T) {
	rules := []corev1.ContainerRestartRule{
		{Action: corev1.ContainerRestartRuleActionRestart,
			ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}},
	}
	notIn := []corev1.ContainerRestartRule{
		{Action: corev1.ContainerRestartRuleActionRestart,
			ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpNotIn, Values: []int32{0}}},
	}
	never := ptr.To(corev1.ContainerRestartPolicyNever)
	tests := []struct {
		name      string
		api       *node.APIPod
		container corev1.Container
		exitCode  int32
		want      bool
	}{
		{name: "no API: keep the worker", api: nil, exitCode: 0, want: true},
		{name: "pod Always", api: podSpec(corev1.RestartPolicyAlways), exitCode: 0, want: true},
		{name: "pod unset is Always", api: podSpec(""), exitCode: 0, want: true},
		{name: "pod Never", api: podSpec(corev1.RestartPolicyNever), exitCode: 1, want: false},
		{name: "pod OnFailure, failed", api: podSpec(corev1.RestartPolicyOnFailure), exitCode: 2, want: true},
		{name: "pod OnFailure, succeeded", api: podSpec(corev1.RestartPolicyOnFailure), exitCode: 0, want: false},
		{name: "container Always over pod Never", api: podSpec(corev1.RestartPolicyNever),
			container: corev1.Container{RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}, want: true},
		{name: "container Never over pod Always", api: podSpec(corev1.RestartPolicyAlways),
			container: corev1.Container{RestartPolicy: never}, want: false},
		{name: "container OnFailure", api: podSpec(corev1.RestartPolicyAlways),
			container: corev1.Container{RestartPolicy: ptr.To(corev1.ContainerRestartPolicyOnFailure)}, exitCode: 0, want: false},
		{name: "rule In matches", api: podSpec(corev1.RestartPolicyNever),
			container: corev1.Container{RestartPolicy: never, RestartPolicyRules: rules}, exitCode: 42, want: true},
		{name: "rule In does not match", api: podSpec(corev1.RestartPolicyNever),
			container: corev1.Container{RestartPolicy: never, RestartPolicyRules: rules}, exitCode: 1, want: false},
		{name: "rule NotIn matches", api: podSpec(corev1.RestartPolicyNever),
			container: corev1.Container{RestartPolicy: never, RestartPolicyRules: notIn}, exitCode: 3, want: true},
		{name: "rules need a container restartPolicy", api: podSpec(corev1.RestartPolicyNever),
			container: corev1.Container{RestartPolicyRules: rules}, exitCode: 42, want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.container.Name = "app"
			if tc.api != nil {
				tc.api.Spec.Containers = []corev1.Container{tc.container}
			}
			c := &node.Container{Name: "app", State: node.StateExited, ExitCode: tc.exitCode}
			if got := willRestart(tc.api, c); got != tc.want {
				t.Fatalf("willRestart = %v, want %v", got, tc.want)
			}
		})
	}
}

func podSpec(p corev1.RestartPolicy) *node.APIPod {
	return &node.APIPod{Spec: &corev1.PodSpec{RestartPolicy: p}}
}

// The kubelet's ContainerShouldRestart with RestartAllContainersOnContainerExits
// on (the v1.36+ default): a matching RestartAllContainers rule restarts the
// container as a Restart rule does; a rule that does not match falls back
// to the container's restartPolicy.
func TestWillRestartOnARestartAllContainersRule(t *testing.T) {
	never := ptr.To(corev1.ContainerRestartPolicyNever)
	rules := []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestartAllContainers,
		ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{7}}}}
	for _, tc := range []struct {
		exitCode int32
		want     bool
	}{{7, true}, {1, false}} {
		api := podSpec(corev1.RestartPolicyNever)
		api.Spec.Containers = []corev1.Container{{Name: "app", RestartPolicy: never, RestartPolicyRules: rules}}
		c := &node.Container{Name: "app", State: node.StateExited, ExitCode: tc.exitCode}
		if got := willRestart(api, c); got != tc.want {
			t.Errorf("exit %d: willRestart = %v, want %v", tc.exitCode, got, tc.want)
		}
	}
}

// The kubelet's ShouldAllContainersRestart as its probe worker asks it.
func TestAllContainersRestarting(t *testing.T) {
	rules := []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestartAllContainers,
		ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpNotIn, Values: []int32{0}}}}
	restartOnly := []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestart,
		ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpNotIn, Values: []int32{0}}}}
	tests := []struct {
		name     string
		api      *node.APIPod
		trigger  node.Container
		wantKeep bool
	}{
		{name: "no API", api: nil, trigger: node.Container{Name: "t", State: node.StateExited, ExitCode: 3}, wantKeep: false},
		{name: "condition True", api: &node.APIPod{Spec: &corev1.PodSpec{}, AllContainersRestarting: true}, wantKeep: true},
		{name: "exited on the rule", api: &node.APIPod{Spec: &corev1.PodSpec{Containers: []corev1.Container{{Name: "t", RestartPolicyRules: rules}}}},
			trigger: node.Container{Name: "t", State: node.StateExited, ExitCode: 3}, wantKeep: true},
		{name: "init container exited on the rule", api: &node.APIPod{Spec: &corev1.PodSpec{InitContainers: []corev1.Container{{Name: "t", RestartPolicyRules: rules}}}},
			trigger: node.Container{Name: "t", State: node.StateExited, ExitCode: 3}, wantKeep: true},
		{name: "exit code not matched", api: &node.APIPod{Spec: &corev1.PodSpec{Containers: []corev1.Container{{Name: "t", RestartPolicyRules: rules}}}},
			trigger: node.Container{Name: "t", State: node.StateExited, ExitCode: 0}, wantKeep: false},
		{name: "a Restart rule restarts only its container", api: &node.APIPod{Spec: &corev1.PodSpec{Containers: []corev1.Container{{Name: "t", RestartPolicyRules: restartOnly}}}},
			trigger: node.Container{Name: "t", State: node.StateExited, ExitCode: 3}, wantKeep: false},
		{name: "still running", api: &node.APIPod{Spec: &corev1.PodSpec{Containers: []corev1.Container{{Name: "t", RestartPolicyRules: rules}}}},
			trigger: node.Container{Name: "t", State: node.StateRunning}, wantKeep: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := &node.Pod{API: tc.api, Containers: []node.Container{tc.trigger}}
			if got := allContainersRestarting(pod); got != tc.wantKeep {
				t.Fatalf("allContainersRestarting = %v, want %v", got, tc.wantKeep)
			}
		})
	}
}
