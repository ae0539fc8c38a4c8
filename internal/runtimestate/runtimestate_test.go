package runtimestate_test

import (
	"strings"
	"testing"

	"github.com/probelet/probelet/internal/runtimestate"
)

func TestStateDir(t *testing.T) {
	tests := []struct {
		name    string
		info    map[string]string
		want    string
		wantErr string
	}{
		{name: "default", info: map[string]string{"config": `{"rootDir":"/var/lib/containerd/io.containerd.grpc.v1.cri","stateDir":"/run/containerd/io.containerd.grpc.v1.cri"}`},
			want: "/run/containerd"},
		{name: "custom state", info: map[string]string{"config": `{"stateDir":"/tmp/pbt-1/state/io.containerd.grpc.v1.cri/"}`}, want: "/tmp/pbt-1/state"},
		{name: "no config", info: map[string]string{"status": "{}"}, wantErr: "no config"},
		{name: "not JSON", info: map[string]string{"config": "{"}, wantErr: "status config"},
		{name: "relative", info: map[string]string{"config": `{"stateDir":"state/io.containerd.grpc.v1.cri"}`}, wantErr: "is not <state>"},
		{name: "another layout", info: map[string]string{"config": `{"stateDir":"/run/crio"}`}, wantErr: "is not <state>"},
		{name: "CRI-O", info: map[string]string{"config": `{"sandboxImage":"registry.k8s.io/pause:3.10","crio":{"default_runtime":"crun"}}`}, wantErr: "is CRI-O"},
		{name: "empty", info: map[string]string{"config": `{}`}, wantErr: "is not <state>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := runtimestate.StateDir(tt.info)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("StateDir = %q, %v; want an error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("StateDir = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
