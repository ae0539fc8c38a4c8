package directexec

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// helperRequest is a request as probelet encodes one, for the seeds.
func helperRequest(p *specs.Process, seccomp []byte, cmd ...string) []byte {
	var w records
	w.add('P', binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint32(nil, 4242), 123456))
	w.str('C', "/sys/fs/cgroup/cpu/kubepods/pod1/c1")
	var in inheritance
	for i := range in.rlimits {
		in.rlimits[i] = unix.Rlimit{Cur: 1024, Max: 4096}
	}
	encodeProcess(&w, p, in, 40)
	w.str('R', "_ses.c1")
	if seccomp != nil {
		w.add('S', append(binary.LittleEndian.AppendUint32(nil, 0), seccomp...))
	}
	w.str('E', "PATH=/usr/bin:/bin")
	w.add('H', nil)
	w.str('D', "/")
	prof := profile{static: w.bytes()}
	return prof.request(cmd, 1000)
}

// FuzzHelperRequest feeds the exec helper's request decoder — the one
// `probelet-exec run` uses, through `probelet-exec check`, which decodes
// and touches no process — arbitrary bytes: it decodes them or refuses
// with a message (exit 2), and never crashes, hangs or reads past them.
// The seeds are requests probelet encodes (more under testdata/fuzz).
func FuzzHelperRequest(f *testing.F) {
	helper := testHelper(f)
	root := &specs.Process{User: specs.User{UID: 0, GID: 0}, Cwd: "/", NoNewPrivileges: true,
		Capabilities: &specs.LinuxCapabilities{Bounding: []string{"CAP_CHOWN", "CAP_KILL"}, Effective: []string{"CAP_CHOWN"}, Permitted: []string{"CAP_CHOWN"}}}
	user := &specs.Process{User: specs.User{UID: 1000, GID: 1000, AdditionalGids: []uint32{5, 6}, Umask: ptr(uint32(0o027))}, Cwd: "/home",
		Capabilities: &specs.LinuxCapabilities{}}
	f.Add(helperRequest(root, nil, "true"))
	f.Add(helperRequest(user, make([]byte, 8*3), "sh", "-c", "echo hi"))
	var confined records
	confined.str('a', "cri-containerd.apparmor.d")
	f.Add(append(confined.bytes(), helperRequest(root, nil, "true")...))
	f.Add([]byte{'Z', 0, 0, 0, 0})
	f.Add([]byte{'A', 0xff, 0xff, 0xff, 0x7f})
	f.Fuzz(func(t *testing.T, req []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, helper, "check")
		cmd.Stdin = bytes.NewReader(req)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if ctx.Err() != nil {
			t.Fatalf("the decoder hung on %q", req)
		}
		var exit *exec.ExitError
		switch {
		case err == nil:
			if !strings.HasPrefix(stdout.String(), "ok ") {
				t.Fatalf("decoded %q into %q", req, stdout.String())
			}
		case errors.As(err, &exit) && exit.ExitCode() == 2:
			if !strings.HasPrefix(stderr.String(), "probelet-exec: ") {
				t.Fatalf("refused %q without its message: %q", req, stderr.String())
			}
		default:
			t.Fatalf("the decoder failed on %q: %v (%s)", req, err, stderr.String())
		}
	})
}

func ptr[T any](v T) *T { return &v }
