package probespec_test

import (
	"strings"
	"testing"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/probespec"
)

func TestPodGracePeriod(t *testing.T) {
	tests := []struct {
		name    string
		ann     map[string]string
		want    *int64
		wantErr string
	}{
		{"absent", map[string]string{"other": "1"}, nil, ""},
		{"nil map", nil, nil, ""},
		{"thirty", map[string]string{probespec.AnnotationPodTerminationGracePeriod: "30"}, ptr(30), ""},
		{"zero", map[string]string{probespec.AnnotationPodTerminationGracePeriod: "0"}, ptr(0), ""},
		{"not a number", map[string]string{probespec.AnnotationPodTerminationGracePeriod: "30s"}, nil,
			`annotation io.kubernetes.pod.terminationGracePeriod="30s": not an integer number of seconds`},
		{"empty", map[string]string{probespec.AnnotationPodTerminationGracePeriod: ""}, nil, "not an integer"},
		{"negative", map[string]string{probespec.AnnotationPodTerminationGracePeriod: "-1"}, nil, "must be greater than or equal to 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := probespec.PodGracePeriod(tc.ann)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || got != nil {
					t.Fatalf("got %v, %v; want error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func ptr(v int64) *int64 { return &v }

func TestPodGrace(t *testing.T) {
	ann := func(v string) map[string]string {
		return map[string]string{probespec.AnnotationPodTerminationGracePeriod: v}
	}
	tests := []struct {
		name    string
		pod     node.Pod
		want    *int64
		wantErr bool
	}{
		{"unknown", node.Pod{Containers: []node.Container{{Name: "a"}}}, nil, false},
		{"the pod's own wins", node.Pod{TerminationGracePeriodSeconds: ptr(5),
			Containers: []node.Container{{Annotations: ann("30")}}}, ptr(5), false},
		{"from a container", node.Pod{Containers: []node.Container{{Name: "a"}, {Name: "b", Annotations: ann("45")}}}, ptr(45), false},
		{"an unreadable one is skipped", node.Pod{Containers: []node.Container{{Annotations: ann("x")}, {Annotations: ann("7")}}}, ptr(7), false},
		{"only unreadable", node.Pod{Containers: []node.Container{{Annotations: ann("x")}}}, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := probespec.PodGrace(&tc.pod)
			if (err != nil) != tc.wantErr || (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
				t.Fatalf("got %v, %v; want %v (error %v)", got, err, tc.want, tc.wantErr)
			}
		})
	}
}
