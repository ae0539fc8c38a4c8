package directexec

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/probelet/probelet/internal/procstat"
)

// profile is everything the helper needs to exec in one container, read
// once from its bundle and /proc: the request records but the command and
// its timeout.
type profile struct {
	pid       int
	startTime uint64
	shim      int // the init's parent: the runtime shim runc exec starts from
	static    []byte
}

// request is the helper's whole request for one probe.
func (p *profile) request(cmd []string, timeoutMs uint64) []byte {
	w := records{b: make([]byte, 0, len(p.static)+64)}
	w.b = append(w.b, p.static...)
	for _, a := range cmd {
		w.str('A', a)
	}
	w.u64('T', timeoutMs)
	w.add('Z', nil)
	return w.bytes()
}

// containerdTaskDir is where containerd v2 keeps the bundles of its v2
// shims under its state directory, one directory per namespace.
const containerdTaskDir = "io.containerd.runtime.v2.task"

// validID guards the bundle path: container IDs are the runtime's, but
// they become path elements here.
var validID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// findBundle returns the container's bundle directory under the state
// directory, whatever containerd namespace it is in. A state directory
// without containerd's task directory is the wrong one (reasonState); a
// container without a bundle in the right one is reasonBundle.
func findBundle(stateDir, id string) (string, error) {
	if !validID.MatchString(id) {
		return "", unsupportedf(reasonBundle, "container ID %q", id)
	}
	tasks := filepath.Join(stateDir, containerdTaskDir)
	namespaces, err := os.ReadDir(tasks)
	if err != nil {
		return "", unsupportedf(reasonState, "%v", err)
	}
	for _, ns := range namespaces {
		dir := filepath.Join(tasks, ns.Name(), id)
		if _, err := os.Stat(filepath.Join(dir, "config.json")); err == nil {
			return dir, nil
		}
	}
	return "", unsupportedf(reasonBundle, "no bundle with a config.json for container %s under %s", id, tasks)
}

// runcOptions are the runc shim's options the exec depends on.
type runcOptions struct {
	NoNewKeyring bool `json:"no_new_keyring"`
}

// checkRuntime makes sure runc runs the container: the runc shim records
// the runtime binary in the bundle (other shims, such as kata's or
// gVisor's, run containers this helper cannot enter).
func checkRuntime(bundle string) (runcOptions, error) {
	var opts runcOptions
	b, err := os.ReadFile(filepath.Join(bundle, "runtime"))
	if err != nil {
		return opts, unsupportedf(reasonRuntime, "no runtime recorded in the bundle: %v", err)
	}
	if bin := strings.TrimSpace(string(b)); filepath.Base(bin) != "runc" {
		return opts, unsupportedf(reasonRuntime, "runtime %q is not runc", bin)
	}
	b, err = os.ReadFile(filepath.Join(bundle, "options.json"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return opts, nil
	case err != nil:
		return opts, unsupportedf(reasonBundle, "%v", err)
	}
	if err := json.Unmarshal(b, &opts); err != nil {
		return opts, unsupportedf(reasonBundle, "options.json: %v", err)
	}
	return opts, nil
}

// buildProfile reads the container's bundle and init process and encodes
// what runc would give an exec in it. An *unsupported error says why the
// runtime must run it instead.
func (r *Runner) buildProfile(ctx context.Context, id string) (*profile, error) {
	bundle, err := r.state.bundle(ctx, id)
	if err != nil {
		return nil, err
	}
	opts, err := checkRuntime(bundle)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(bundle, "config.json"))
	if err != nil {
		return nil, unsupportedf(reasonBundle, "%v", err)
	}
	cfg, err := parseConfig(data)
	if err != nil {
		return nil, err
	}
	p, err := r.initProcess(bundle, id)
	if err != nil {
		return nil, err
	}
	dirs, err := r.containerCgroups(p.pid, id)
	if err != nil {
		return nil, err
	}
	prog, err := compileSeccomp(ctx, r.helper, cfg.Linux.Seccomp)
	if err != nil {
		return nil, err
	}
	env, home, err := prepareEnv(cfg.Process.Env)
	if err != nil {
		return nil, unsupportedf(reasonProcess, "%v", err)
	}
	var w records
	w.add('P', binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint32(nil, uint32(p.pid)), p.startTime))
	for _, d := range dirs {
		w.str('C', d)
	}
	inherited, err := r.shimInheritance(p.shim)
	if err != nil {
		return nil, err
	}
	encodeProcess(&w, &cfg.Process, inherited, r.lastCap)
	if !opts.NoNewKeyring {
		w.str('R', "_ses."+id) // runc's session keyring per container
	}
	if cfg.Process.ApparmorProfile != "" {
		w.str('a', cfg.Process.ApparmorProfile)
	}
	if prog != nil {
		w.add('S', append(binary.LittleEndian.AppendUint32(nil, prog.flags), prog.prog...))
	}
	for _, kv := range env {
		w.str('E', kv)
	}
	if home {
		w.add('H', nil)
	}
	w.str('D', cfg.Process.Cwd)
	p.static = w.bytes()
	return p, nil
}

// inheritance is what a runc exec inherits from the shim that starts it
// where config.json says nothing: rlimits and the OOM score adjustment.
type inheritance struct {
	rlimits [numRlimits]unix.Rlimit
	oom     int
}

const numRlimits = 16

// shimInheritance reads the shim's rlimits and oom_score_adj.
func (r *Runner) shimInheritance(shim int) (inheritance, error) {
	var in inheritance
	for res := range numRlimits {
		if err := unix.Prlimit(shim, res, nil, &in.rlimits[res]); err != nil {
			return in, unsupportedf(reasonIdentity, "rlimits of the shim (pid %d): %v", shim, err)
		}
	}
	b, err := os.ReadFile(filepath.Join(r.procRoot, strconv.Itoa(shim), "oom_score_adj"))
	if err == nil {
		in.oom, err = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	if err != nil {
		return in, unsupportedf(reasonIdentity, "oom_score_adj of the shim (pid %d): %v", shim, err)
	}
	return in, nil
}

// encodeProcess writes the process settings runc applies to an exec: the
// rlimits and OOM score adjustment of config.json over the shim's, the
// user, groups, capabilities, no_new_privs and umask.
func encodeProcess(w *records, p *specs.Process, in inheritance, lastCap uint) {
	lims := in.rlimits
	for _, rl := range p.Rlimits {
		lims[rlimits[rl.Type]] = unix.Rlimit{Cur: rl.Soft, Max: rl.Hard}
	}
	for res, l := range lims {
		b := binary.LittleEndian.AppendUint32(nil, uint32(res))
		b = binary.LittleEndian.AppendUint64(b, l.Cur)
		w.add('L', binary.LittleEndian.AppendUint64(b, l.Max))
	}
	oom := in.oom
	if p.OOMScoreAdj != nil {
		oom = *p.OOMScoreAdj
	}
	w.u32('O', uint32(int32(oom)))
	w.add('U', binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, p.User.UID), p.User.GID))
	groups := make([]byte, 0, 4*len(p.User.AdditionalGids))
	for _, g := range p.User.AdditionalGids {
		groups = binary.LittleEndian.AppendUint32(groups, g)
	}
	w.add('G', groups)
	c := p.Capabilities
	var caps []byte
	for _, set := range [][]string{c.Bounding, c.Effective, c.Inheritable, c.Permitted, c.Ambient} {
		caps = binary.LittleEndian.AppendUint64(caps, capMask(set, lastCap))
	}
	w.add('K', caps)
	if p.NoNewPrivileges {
		w.add('N', nil)
	}
	if p.User.Umask != nil {
		w.u32('M', *p.User.Umask)
	}
}

// initProcess reads the container's init pid as the shim recorded it and
// ties it to the container: it must run, and sit in a cgroup named after
// the container (what runc and containerd's cgroup drivers name it).
func (r *Runner) initProcess(bundle, id string) (*profile, error) {
	b, err := os.ReadFile(filepath.Join(bundle, "init.pid"))
	if err != nil {
		return nil, unsupportedf(reasonIdentity, "%v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return nil, unsupportedf(reasonIdentity, "init.pid %q", b)
	}
	st, err := procstat.Read(r.procRoot, pid)
	if err != nil {
		return nil, fmt.Errorf("%w: init process %d: %v", errNotRunning, pid, err)
	}
	if st.State == 'Z' || st.State == 'X' {
		return nil, fmt.Errorf("%w: init process %d has exited", errNotRunning, pid)
	}
	return &profile{pid: pid, startTime: st.StartTime, shim: st.PPid}, nil
}

// containerCgroups returns the cgroup directories of the init process,
// after checking they belong to the container.
func (r *Runner) containerCgroups(pid int, id string) ([]string, error) {
	cg, err := os.ReadFile(filepath.Join(r.procRoot, strconv.Itoa(pid), "cgroup"))
	if err != nil {
		return nil, fmt.Errorf("%w: init process %d: %v", errNotRunning, pid, err)
	}
	if !strings.Contains(string(cg), id) {
		return nil, unsupportedf(reasonIdentity, "init process %d is in no cgroup named after the container", pid)
	}
	dirs, err := cgroupDirs(cg, r.mounts())
	if err != nil {
		// A hierarchy mounted since start-up: read the mounts again once.
		r.refreshMounts()
		if dirs, err = cgroupDirs(cg, r.mounts()); err != nil {
			return nil, err
		}
	}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "cgroup.procs")); err != nil {
			return nil, unsupportedf(reasonCgroup, "%v", err)
		}
	}
	return dirs, nil
}
