package directexec

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestCgroupDirs(t *testing.T) {
	// The cgroup mounts of the machine the test bed runs on: cgroup v1 with
	// a hierarchy per controller, a named systemd one, and cgroup2 beside.
	mi, err := os.ReadFile(filepath.Join("testdata", "mountinfo-cgroup-v1"))
	if err != nil {
		t.Fatal(err)
	}
	hybrid := parseCgroupMounts(mi)
	if len(hybrid) != 10 {
		t.Fatalf("parsed %d cgroup mounts, want 10 (the tmpfs is not one)", len(hybrid))
	}
	comounted := parseCgroupMounts([]byte(
		"25 24 0:22 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n" +
			"26 24 0:23 /kubepods /mnt/my\\040cgroup rw - cgroup cgroup rw,memory\n" +
			"27 24 0:24 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"))
	const id = "/probelet-testbed-1bd9efdd2d/48ce"
	tests := []struct {
		name   string
		mounts []cgroupMount
		procs  string
		want   []string
	}{
		{"every hierarchy", hybrid,
			"9:name=systemd:" + id + "\n4:memory:" + id + "\n1:cpu:" + id + "\n0::" + id + "\n",
			[]string{"/sys/fs/cgroup/systemd" + id, "/sys/fs/cgroup/memory" + id, "/sys/fs/cgroup/cpu" + id, "/sys/fs/cgroup/unified" + id}},
		{"co-mounted controllers", comounted, "3:cpu,cpuacct:/a\n", []string{"/sys/fs/cgroup/cpu,cpuacct/a"}},
		{"the mount of the hierarchy's root wins", comounted, "4:memory:/kubepods/pod1\n", []string{"/sys/fs/cgroup/memory/kubepods/pod1"}},
		{"a mount of a subtree when it is the only one", comounted[:2], "4:memory:/kubepods/pod1\n", []string{"/mnt/my cgroup/pod1"}},
		{"a hierarchy not mounted here", comounted, "5:pids:/a\n", nil},
		{"a cgroup outside the only mount", comounted[:2], "4:memory:/system.slice\n", nil},
		{"no unified mount", comounted, "0::/a\n", nil},
		{"a malformed line", hybrid, "garbage\n", nil},
		{"no cgroups", hybrid, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := cgroupDirs([]byte(tt.procs), tt.mounts)
			var u *unsupported
			if tt.want == nil {
				if !errors.As(err, &u) || u.reason != reasonCgroup {
					t.Fatalf("cgroupDirs = %q, %v; want a cgroup fallback", got, err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("cgroupDirs = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
