package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	root := t.TempDir()
	bin := filepath.Join(root, "probelet")
	conf := filepath.Join(root, "probelet.conf")
	for path, content := range map[string]string{bin: "exe", conf: "--tcp-mode=auto\n"} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	plugins, confDir := filepath.Join(root, "opt", "nri", "plugins"), filepath.Join(root, "etc", "nri", "conf.d")
	common := []string{"--binary=" + bin, "--plugin-dir=" + plugins, "--config-dir=" + confDir}
	cases := []struct {
		name    string
		args    []string
		want    []string // output lines, in order
		wantErr string
	}{
		{name: "install", args: append([]string{"--config=" + conf}, common...), want: []string{
			"installed " + plugins + "/10-probelet", "installed " + confDir + "/10-probelet.conf", "restart containerd"}},
		{name: "again", args: append([]string{"--config=" + conf}, common...), want: []string{
			"unchanged " + plugins + "/10-probelet", "unchanged " + confDir + "/10-probelet.conf"}},
		{name: "uninstall", args: append([]string{"--uninstall"}, common...), want: []string{
			"removed " + plugins + "/10-probelet", "removed " + confDir + "/10-probelet.conf", "restart containerd"}},
		{name: "CRI-O", args: append([]string{"--runtime=crio", "--config=" + conf}, common...), want: []string{
			"installed " + plugins + "/10-probelet", "installed " + confDir + "/10-probelet.conf", "restart crio"}},
		{name: "unknown runtime", args: append([]string{"--runtime=docker"}, common...), wantErr: `--runtime "docker": want containerd or crio`},
		{name: "bad index", args: append([]string{"--index=7"}, common...), wantErr: `invalid plugin index "7"`},
		{name: "missing config", args: append([]string{"--config=" + root + "/nope"}, common...), wantErr: "read plugin configuration"},
		{name: "stray argument", args: append([]string{"now"}, common...), wantErr: "unexpected arguments"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := run(tc.args, &out)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := out.String()
			for _, w := range tc.want {
				i := strings.Index(got, w)
				if i < 0 {
					t.Fatalf("output %q lacks %q", out.String(), w)
				}
				got = got[i+len(w):]
			}
			if len(tc.want) == 2 && strings.Contains(out.String(), "restart") {
				t.Errorf("nothing changed, yet output asks for a restart: %q", out.String())
			}
		})
	}
}

func TestRunReportsBlockingNeighbours(t *testing.T) {
	root := t.TempDir()
	plugins := filepath.Join(root, "opt", "nri", "plugins")
	if err := os.MkdirAll(plugins, 0o755); err != nil {
		t.Fatal(err)
	}
	for path, mode := range map[string]os.FileMode{filepath.Join(root, "probelet"): 0o644, filepath.Join(plugins, "logger"): 0o755} {
		if err := os.WriteFile(path, []byte("x"), mode); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	err := run([]string{"--binary=" + root + "/probelet", "--plugin-dir=" + plugins, "--config-dir=" + root + "/conf.d"}, &out)
	if err == nil || !strings.Contains(err.Error(), "logger blocks all pre-installed NRI plugins") {
		t.Fatalf("error %v, want the stray executable named", err)
	}
}
