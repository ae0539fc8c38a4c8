package spec_test

import (
	"strings"
	"testing"

	"github.com/probelet/probelet/prober/spec"
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
		{"thirty", map[string]string{spec.AnnotationPodTerminationGracePeriod: "30"}, ptr(30), ""},
		{"zero", map[string]string{spec.AnnotationPodTerminationGracePeriod: "0"}, ptr(0), ""},
		{"not a number", map[string]string{spec.AnnotationPodTerminationGracePeriod: "30s"}, nil,
			`annotation io.kubernetes.pod.terminationGracePeriod="30s": not an integer number of seconds`},
		{"empty", map[string]string{spec.AnnotationPodTerminationGracePeriod: ""}, nil, "not an integer"},
		{"negative", map[string]string{spec.AnnotationPodTerminationGracePeriod: "-1"}, nil, "must be greater than or equal to 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := spec.PodGracePeriod(tc.ann)
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
