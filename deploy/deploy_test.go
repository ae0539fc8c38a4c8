package deploy_test

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// expect is what one rendering must contain beyond the shared contracts.
type expect struct {
	agent     bool              // the probelet DaemonSet
	installer bool              // the pre-installed variant's installer
	image     string            // every container's image
	flags     map[string]string // agent flags with their values
}

var baseFlags = map[string]string{
	"--nri-socket":           "/var/run/nri/nri.sock",
	"--runtime-endpoint":     "unix:///run/containerd/containerd.sock",
	"--listen":               "unix:///run/probelet/probelet.sock",
	"--metrics-bind-address": "127.0.0.1:9809",
	"--tcp-mode":             "auto",
}

// withComponents wraps the base with components, as a user's overlay does.
func withComponents(components ...string) string {
	var b strings.Builder
	b.WriteString("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../deploy/base\ncomponents:\n")
	for _, c := range components {
		fmt.Fprintf(&b, "  - ../deploy/components/%s\n", c)
	}
	return b.String()
}

func TestKustomizations(t *testing.T) {
	cases := []struct {
		name string
		dir  string // a shipped kustomization, built from disk
		wrap string // else this kustomization around the shipped trees
		want expect
	}{
		{name: "base", dir: "base", want: expect{agent: true, image: "probelet:latest", flags: baseFlags}},
		{name: "overlays/example", dir: "overlays/example", want: expect{agent: true,
			image: "registry.example.com/probelet/probelet:v0.1.0", flags: map[string]string{"--liveness-action": "report"}}},
		{name: "overlays/preinstalled", dir: "overlays/preinstalled", want: expect{installer: true, image: "probelet:latest"}},
		{name: "overlays/testbed", dir: "overlays/testbed", want: expect{agent: true, image: "localhost/probelet/probelet:e2e", flags: baseFlags}},
		{name: "components/metrics-on-all-interfaces", wrap: withComponents("metrics-on-all-interfaces"),
			want: expect{agent: true, image: "probelet:latest", flags: map[string]string{"--metrics-bind-address": "0.0.0.0:9809"}}},
		{name: "components/report-only", wrap: withComponents("report-only"),
			want: expect{agent: true, image: "probelet:latest", flags: map[string]string{"--liveness-action": "report"}}},
		{name: "components/tcp-dial", wrap: withComponents("tcp-dial"),
			want: expect{agent: true, image: "probelet:latest", flags: map[string]string{"--tcp-mode": "dial"}}},
		{name: "components/crio", wrap: withComponents("crio"),
			want: expect{agent: true, image: "probelet:latest", flags: map[string]string{"--runtime-endpoint": "unix:///var/run/crio/crio.sock"}}},
		{name: "all components", wrap: withComponents("metrics-on-all-interfaces", "report-only", "tcp-dial"),
			want: expect{agent: true, image: "probelet:latest", flags: map[string]string{
				"--tcp-mode": "dial", "--liveness-action": "report", "--metrics-bind-address": "0.0.0.0:9809"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var fsys filesys.FileSystem = filesys.MakeFsOnDisk()
			dir := tc.dir
			if tc.wrap != "" {
				fsys, dir = memFS(t), "/wrap"
				writeKustomization(t, fsys, dir, tc.wrap)
			}
			objs, err := load(fsys, dir)
			if err != nil {
				t.Fatal(err)
			}
			if err := errors.Join(checkAll(objs), checkExpect(objs, tc.want)); err != nil {
				t.Error(err)
			}
		})
	}
}

// checkAll applies every contract to the objects present.
func checkAll(objs *objects) error {
	errs := []error{checkCommon(objs), checkRights(objs)}
	for name, ds := range objs.daemonSets {
		var err error
		switch name {
		case agentName:
			err = checkAgent(ds)
		case installerName:
			err = checkInstaller(ds, objs.configMaps)
		default:
			err = errors.New("unexpected DaemonSet")
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("DaemonSet %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

func checkExpect(objs *objects, want expect) error {
	var errs []error
	agent, installer := objs.daemonSets[agentName], objs.daemonSets[installerName]
	if (agent != nil) != want.agent || (installer != nil) != want.installer {
		return fmt.Errorf("agent present=%v installer present=%v, want %v and %v", agent != nil, installer != nil, want.agent, want.installer)
	}
	for _, ds := range objs.daemonSets {
		errs = append(errs, checkImage(ds, want.image))
	}
	if agent == nil {
		return errors.Join(errs...)
	}
	flags, err := parseFlags(agent.Spec.Template.Spec.Containers[0].Args)
	errs = append(errs, err)
	for f, v := range want.flags {
		if flags[f] != v {
			errs = append(errs, fmt.Errorf("agent flag %s=%q, want %q", f, flags[f], v))
		}
	}
	return errors.Join(errs...)
}

func checkImage(ds *appsv1.DaemonSet, want string) error {
	for _, c := range ds.Spec.Template.Spec.Containers {
		if c.Image != want {
			return fmt.Errorf("DaemonSet %s container %s: image %q, want %q", ds.Name, c.Name, c.Image, want)
		}
	}
	return nil
}

// TestChecksCatchBreakage breaks a shipped kustomization in one way per case
// and expects the pipeline (schemas, strict decoding, contracts) to say so.
func TestChecksCatchBreakage(t *testing.T) {
	for _, tc := range breakages {
		t.Run(tc.name, func(t *testing.T) {
			fsys := memFS(t)
			for name, content := range tc.files {
				if err := fsys.WriteFile(path.Join("/wrap", name), []byte(content)); err != nil {
					t.Fatal(err)
				}
			}
			writeKustomization(t, fsys, "/wrap", tc.kustomization())
			objs, err := load(fsys, "/wrap")
			if err == nil {
				err = checkAll(objs)
			}
			t.Log(err)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v\nwant one containing %q", err, tc.want)
			}
		})
	}
}
