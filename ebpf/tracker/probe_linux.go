package tracker

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

// featureProbe is how one optional capability is detected.
type featureProbe struct {
	feature Features
	have    func() (bool, error)
}

// featureProbes are the probes, one per capability: whether a program at
// the hook that uses a helper may call it, and for SnapshotCookie, whether
// the verifier takes the very code that needs it.
var featureProbes = []featureProbe{
	{SockFromFile, func() (bool, error) {
		return haveTracingHelper(ebpf.AttachTraceIter, "task_file", asm.FnSockFromFile)
	}},
	{TracingCookie, func() (bool, error) {
		return haveTracingHelper(ebpf.AttachTraceRawTp, "inet_sock_set_state", asm.FnGetSocketCookie)
	}},
	{SnapshotCookie, haveSnapshotCookie},
}

var (
	probeOnce   sync.Once
	probed      Features
	probeErrors error
)

// kernelFeatures probes the running kernel once per process. A probe that
// cannot decide (errors) counts as "absent": the fallback paths work on
// every supported kernel.
func kernelFeatures() (Features, error) {
	probeOnce.Do(func() {
		var errs []error
		for _, p := range featureProbes {
			ok, err := p.have()
			if err != nil {
				errs = append(errs, fmt.Errorf("probe %s: %w", p.feature, err))
			}
			if ok {
				probed |= p.feature
			}
		}
		probeErrors = errors.Join(errs...)
	})
	return probed, probeErrors
}

// haveTracingHelper reports whether a tracing program attached at attachTo
// may call helper. It reads the verifier's answer the way cilium/ebpf's
// features.HaveProgramHelper does for the program types it covers (it has
// no probe for tracing programs): the call is made with unset arguments, so
// a known helper fails the argument check (EACCES) and an unknown one, or
// one this program type may not use, fails with EINVAL first.
func haveTracingHelper(attachType ebpf.AttachType, attachTo string, helper asm.BuiltinFunc) (bool, error) {
	prog, err := ebpf.NewProgramWithOptions(&ebpf.ProgramSpec{
		Type:       ebpf.Tracing,
		AttachType: attachType,
		AttachTo:   attachTo,
		License:    "GPL",
		Instructions: asm.Instructions{
			helper.Call(),
			asm.Mov.Imm(asm.R0, 0),
			asm.Return(),
		},
	}, ebpf.ProgramOptions{LogLevel: ebpf.LogLevelInstruction})
	if err == nil {
		prog.Close()
		return true, nil
	}
	var ve *ebpf.VerifierError
	switch {
	case !errors.As(err, &ve):
		return false, err
	case errors.Is(err, unix.EACCES):
		return true, nil
	case errors.Is(err, unix.EINVAL) && logSays(ve.Log, "unknown func", "invalid func", "cannot use helper"):
		return false, nil
	}
	return false, err
}

func logSays(log []string, needles ...string) bool {
	for _, line := range log[max(0, len(log)-5):] {
		for _, n := range needles {
			if strings.Contains(line, n) {
				return true
			}
		}
	}
	return false
}

// haveSnapshotCookie loads tracker.c's snapshot program alone with every
// gate on its way to bpf_get_socket_cookie set. Whether the verifier
// accepts the socket the snapshot reaches through bpf_sock_from_file as a
// socket pointer changed within a stable series (Linux 6.18.44 types it
// untrusted), so no helper list or release number can say; the verifier's
// answer on the exact code can. A refusal means absent: the gate off is the
// path every supported kernel loads. Other errors cannot decide.
func haveSnapshotCookie() (bool, error) {
	spec, err := loadTracker()
	if err != nil {
		return false, err
	}
	for _, name := range []string{trackerVarHaveSockFromFile, trackerVarHaveTracingCookie, trackerVarHaveSnapshotCookie} {
		if err := spec.Variables[name].Set(true); err != nil {
			return false, fmt.Errorf("set %s: %w", name, err)
		}
	}
	var objs struct {
		Snapshot *ebpf.Program `ebpf:"snapshot"`
	}
	err = spec.LoadAndAssign(&objs, nil)
	if err == nil {
		return true, objs.Snapshot.Close()
	}
	var ve *ebpf.VerifierError
	if errors.As(err, &ve) {
		return false, nil
	}
	return false, err
}
