package cluster

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
)

// TestOptions: the options reach the cluster, and one that is invalid
// fails newCluster (harness's TestSetters checks the scripts' rules).
func TestOptions(t *testing.T) {
	for _, opt := range []Option{WithCacheDir("cache"), WithControllers("")} {
		if _, err := newCluster(t, []Option{opt}); err == nil || !strings.HasPrefix(err.Error(), "cluster: ") {
			t.Errorf("newCluster with an invalid option = %v, want a cluster error", err)
		}
	}
	c, err := newCluster(t, []Option{WithCacheDir("/c"), WithScriptsDir("/s"), WithStartTimeout(time.Minute),
		WithFeatureGates("A=true"), WithControllers("*,-podgc")})
	if err != nil {
		t.Fatal(err)
	}
	if s := c.scripts; s.CacheDir != "/c" || s.Dir != "/s" || s.StartTimeout != time.Minute ||
		c.featureGates != "A=true" || c.controllers != "*,-podgc" {
		t.Errorf("options not applied: %+v", c)
	}
}

func TestKubeletOptions(t *testing.T) {
	tests := []struct {
		name string
		opts []KubeletOption
		want []string // scriptArgs, or nil with wantErr
		err  string
	}{
		{"defaults", nil, nil, ""},
		{"all", []KubeletOption{WithNodeName("n1"), WithCRIEndpoint("unix:///p.sock"), WithImageEndpoint("unix:///c.sock"),
			WithKubeletFeatureGates("EventedPLEG=true")},
			[]string{"--node", "n1", "--endpoint", "unix:///p.sock", "--image-endpoint", "unix:///c.sock", "--feature-gates", "EventedPLEG=true"}, ""},
		{"upper-case node", []KubeletOption{WithNodeName("Node")}, nil, "lower-case"},
		{"empty node", []KubeletOption{WithNodeName("")}, nil, "lower-case"},
		{"endpoint without scheme", []KubeletOption{WithCRIEndpoint("/p.sock")}, nil, "unix://"},
		{"image endpoint without scheme", []KubeletOption{WithImageEndpoint("tcp://x")}, nil, "unix://"},
		{"arg without dashes", []KubeletOption{WithKubeletArgs("v=4")}, nil, "--flag"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var cfg kubeletConfig
			var err error
			for _, o := range tc.opts {
				if err = o(&cfg); err != nil {
					break
				}
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("err = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.scriptArgs(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("scriptArgs = %q, want %q", got, tc.want)
			}
		})
	}
	var cfg kubeletConfig
	if err := WithKubeletArgs("--v=4", "--max-pods=10")(&cfg); err != nil || !reflect.DeepEqual(cfg.args, []string{"--v=4", "--max-pods=10"}) {
		t.Errorf("WithKubeletArgs: %v, args %q", err, cfg.args)
	}
}

// TestTokenKubeconfig writes the ServiceAccount kubeconfig the way
// ServiceAccountKubeconfig does and loads it back as kubectl would.
func TestTokenKubeconfig(t *testing.T) {
	dir := t.TempDir()
	path, ca := filepath.Join(dir, "sa.kubeconfig"), filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(ca, nil, 0o644); err != nil { // loading only checks that it can be read
		t.Fatal(err)
	}
	user := "system:serviceaccount:ns:probelet"
	if err := clientcmd.WriteToFile(*tokenKubeconfig("https://127.0.0.1:6443", ca, user, "tok"), path); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://127.0.0.1:6443" || cfg.CAFile != ca || cfg.BearerToken != "tok" || cfg.CertFile != "" {
		t.Errorf("loaded %+v", cfg)
	}
}

func TestPodCondition(t *testing.T) {
	pod := &corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionFalse},
		{Type: "probelet.io/ready", Status: corev1.ConditionTrue},
	}}}
	tests := []struct {
		typ  corev1.PodConditionType
		want corev1.ConditionStatus
	}{
		{corev1.PodReady, corev1.ConditionFalse},
		{"probelet.io/ready", corev1.ConditionTrue},
		{corev1.ContainersReady, ""},
	}
	for _, tc := range tests {
		if got := PodCondition(pod, tc.typ); got != tc.want {
			t.Errorf("PodCondition(%s) = %q, want %q", tc.typ, got, tc.want)
		}
	}
}

func TestDescribe(t *testing.T) {
	pod := &corev1.Pod{Status: corev1.PodStatus{
		Phase:      corev1.PodPending,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "web", State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull", Message: "no image"}}}},
	}}
	want := "phase Pending, Ready=False, container web waiting (ErrImageNeverPull: no image)"
	if got := describe(pod, nil); got != want {
		t.Errorf("describe = %q, want %q", got, want)
	}
	if got := describe(nil, nil); got != "nothing" {
		t.Errorf("describe(nil) = %q", got)
	}
}
