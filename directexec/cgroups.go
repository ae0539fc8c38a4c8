package directexec

import (
	"bufio"
	"bytes"
	"path"
	"slices"
	"strconv"
	"strings"
)

// cgroupMount is a cgroup hierarchy mounted in this mount namespace.
type cgroupMount struct {
	root, point string
	v2          bool
	options     []string // the super options: controllers and name=
}

// parseCgroupMounts reads the cgroup and cgroup2 mounts of a mountinfo file.
func parseCgroupMounts(mountinfo []byte) []cgroupMount {
	var out []cgroupMount
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent maj:min root point options [optional...] - fstype source superoptions
		before, after, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(before), strings.Fields(after)
		if len(f) < 5 || len(g) < 3 || (g[0] != "cgroup" && g[0] != "cgroup2") {
			continue
		}
		out = append(out, cgroupMount{
			root: unescapeMountinfo(f[3]), point: unescapeMountinfo(f[4]),
			v2: g[0] == "cgroup2", options: strings.Split(g[2], ","),
		})
	}
	return out
}

// unescapeMountinfo undoes the kernel's octal escapes (\040 for a space).
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// cgroupDirs maps each line of a process's /proc/PID/cgroup to the
// directory of that cgroup under the mounts: the cgroups runc exec puts its
// process in (runc joins the container's cgroup in every hierarchy). A
// hierarchy that is not mounted here is an error.
func cgroupDirs(procCgroup []byte, mounts []cgroupMount) ([]string, error) {
	var dirs []string
	for line := range strings.Lines(string(procCgroup)) {
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			continue
		}
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			return nil, unsupportedf(reasonCgroup, "malformed cgroup line %q", line)
		}
		m, ok := findCgroupMount(mounts, parts[1], parts[2])
		if !ok {
			return nil, unsupportedf(reasonCgroup, "cgroup %q is not mounted here", line)
		}
		rel := strings.TrimPrefix(parts[2], m.root)
		dirs = append(dirs, path.Join(m.point, rel))
	}
	if len(dirs) == 0 {
		return nil, unsupportedf(reasonCgroup, "the process is in no cgroup")
	}
	return dirs, nil
}

// findCgroupMount finds where the hierarchy of controllers ("" for the
// unified one) is mounted with cgroupPath inside it, preferring the mount
// of its root.
func findCgroupMount(mounts []cgroupMount, controllers, cgroupPath string) (cgroupMount, bool) {
	var best cgroupMount
	found := false
	for _, m := range mounts {
		if !hierarchyMatches(m, controllers) || !inside(cgroupPath, m.root) {
			continue
		}
		if !found || len(m.root) < len(best.root) {
			best, found = m, true
		}
	}
	return best, found
}

func hierarchyMatches(m cgroupMount, controllers string) bool {
	if controllers == "" {
		return m.v2
	}
	if m.v2 {
		return false
	}
	for c := range strings.SplitSeq(controllers, ",") {
		if !slices.Contains(m.options, c) {
			return false
		}
	}
	return true
}

func inside(p, root string) bool {
	return root == "/" || p == root || strings.HasPrefix(p, root+"/")
}
