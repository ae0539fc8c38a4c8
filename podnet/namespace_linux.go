//go:build linux

package podnet

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"sync"

	"golang.org/x/sys/unix"
)

// nsGetNSType is linux/nsfs.h's NS_GET_NSTYPE, _IO(0xb7, 0x3): the kind
// of namespace a namespace file is.
const nsGetNSType = 0xb703

// ID identifies a network namespace: its nsfs device and inode, what
// /proc/PID/ns/net names as net:[INODE].
type ID struct{ Dev, Ino uint64 }

func (id ID) String() string { return fmt.Sprintf("net:[%d]", id.Ino) }

// ErrGone is a socket asked of a namespace its pod released: the pod is
// gone, and so is its probe's answer (a prober error, never a Failure).
var ErrGone = errors.New("the pod's network namespace was released (the pod is gone)")

// Pins are the pods' pinned network namespaces: one per sandbox, none the
// node's own. A Pins is made once per process (NewPins) and is safe for
// concurrent use.
type Pins struct {
	// home is probelet's own network namespace, which a thread returns to
	// after its socket call.
	home int
	// node are namespaces no pod may claim: probelet's own and, when it
	// can be read, init's.
	node []ID
	mu   sync.Mutex
	// owners counts the open Namespaces per pinned namespace, and says
	// which sandbox has it.
	owners map[ID]*owner
}

type owner struct {
	sandbox string
	refs    int
}

// NewPins opens probelet's own network namespace (where its threads live)
// and notes init's, both refused to pods.
func NewPins() (*Pins, error) {
	fd, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: "/proc/thread-self/ns/net", Err: err}
	}
	self, err := idOf(fd)
	if err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	p := &Pins{home: fd, node: []ID{self}, owners: map[ID]*owner{}}
	if init, err := statID("/proc/1/ns/net"); err == nil && init != self {
		p.node = append(p.node, init)
	}
	return p, nil
}

// Open pins the network namespace at path (as the runtime named it for
// sandbox, whose address is ip) for that sandbox's probes. It refuses a
// file that is not a network namespace, the node's namespace, one another
// sandbox holds, and one where ip is not an address of its own (a
// namespace swapped for another pod's or made empty): whatever the path
// says later, the Namespace keeps the one it opened.
func (p *Pins) Open(sandbox, path string, ip netip.Addr) (*Namespace, error) {
	// Non-blocking: a FIFO mounted over the file must not hang the open.
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	id, err := p.check(fd, path)
	if err == nil {
		err = p.holds(fd, id, path, ip)
	}
	if err == nil {
		err = p.claim(id, sandbox, path)
	}
	if err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	return &Namespace{pins: p, id: id, path: path, sandbox: sandbox, fd: fd}, nil
}

// check reads the namespace fd stands for, refusing anything but a
// network namespace that is not the node's.
func (p *Pins) check(fd int, path string) (ID, error) {
	var fs unix.Statfs_t
	if err := unix.Fstatfs(fd, &fs); err != nil {
		return ID{}, &os.PathError{Op: "statfs", Path: path, Err: err}
	}
	if fs.Type != unix.NSFS_MAGIC {
		return ID{}, fmt.Errorf("%s is not a namespace file", path)
	}
	if t, err := unix.IoctlRetInt(fd, nsGetNSType); err != nil || t != unix.CLONE_NEWNET {
		return ID{}, fmt.Errorf("%s is not a network namespace", path)
	}
	id, err := idOf(fd)
	if err != nil {
		return ID{}, err
	}
	if slices.Contains(p.node, id) {
		return ID{}, fmt.Errorf("%s is the node's network namespace (%s): no probe is dialled from it for a pod", path, id)
	}
	return id, nil
}

// holds checks that ip is an address of the namespace fd stands for: a
// socket made there binds to it (EADDRNOTAVAIL where it is not local).
func (p *Pins) holds(fd int, id ID, path string, ip netip.Addr) error {
	if !ip.IsValid() {
		return fmt.Errorf("%s: the pod's address is not known, so the namespace cannot be checked", path)
	}
	ip = ip.Unmap()
	family, sa := unix.AF_INET, unix.Sockaddr(&unix.SockaddrInet4{Addr: ip.As4()})
	if ip.Is6() {
		family, sa = unix.AF_INET6, &unix.SockaddrInet6{Addr: ip.As16()}
	}
	s, err := p.hop(fd, func() (int, error) { return unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0) })
	if err != nil {
		return err
	}
	defer unix.Close(s)
	if err := unix.Bind(s, sa); err != nil {
		if errors.Is(err, unix.EADDRNOTAVAIL) {
			return fmt.Errorf("%s (%s) does not hold the pod's address %s: not the pod's network namespace", path, id, ip)
		}
		return fmt.Errorf("%s (%s): checking the pod's address %s: %w", path, id, ip, os.NewSyscallError("bind", err))
	}
	return nil
}

func (p *Pins) claim(id ID, sandbox, path string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	o := p.owners[id]
	switch {
	case o == nil:
		p.owners[id] = &owner{sandbox: sandbox, refs: 1}
	case o.sandbox != sandbox:
		return fmt.Errorf("%s (%s) is the network namespace of another sandbox, %s", path, id, o.sandbox)
	default:
		o.refs++
	}
	return nil
}

func (p *Pins) release(id ID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if o := p.owners[id]; o != nil {
		if o.refs--; o.refs <= 0 {
			delete(p.owners, id)
		}
	}
}

// Pinned is how many namespaces are pinned now.
func (p *Pins) Pinned() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.owners)
}

// Namespace is one sandbox's pinned network namespace.
type Namespace struct {
	pins    *Pins
	id      ID
	path    string
	sandbox string
	mu      sync.RWMutex
	fd      int // -1 once released
}

// ID is the namespace's identity.
func (n *Namespace) ID() ID { return n.id }

// Path is the file it was opened from.
func (n *Namespace) Path() string { return n.path }

// String names the namespace as /proc does.
func (n *Namespace) String() string { return n.id.String() }

// Socket makes a non-blocking, close-on-exec socket in n; its errors are
// SocketErrors. The calling goroutine's thread enters the namespace for
// the socket call alone, locked to it until it is back (hop).
func (n *Namespace) Socket(family, sotype, proto int) (int, error) {
	fd, err := n.socket(family, sotype, proto)
	if err != nil {
		return -1, &SocketError{Namespace: n.String(), Err: err}
	}
	return fd, nil
}

func (n *Namespace) socket(family, sotype, proto int) (int, error) {
	n.mu.RLock()
	defer n.mu.RUnlock()
	if n.fd < 0 {
		return -1, ErrGone
	}
	return n.pins.hop(n.fd, func() (int, error) {
		return rawSocket(family, sotype|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, proto)
	})
}

// hop runs socket inside the namespace target (a namespace file) on the
// calling goroutine's thread, locked to it from entering until it is back
// home: two setns calls and no hand-off, where a goroutine of its own
// cost a probe two thread wake-ups (BenchmarkSocket; hack/bench/node). The
// runtime creates no thread from a locked one (its template thread does),
// so no thread is born in the pod's namespace.
func (p *Pins) hop(target int, socket func() (int, error)) (int, error) {
	runtime.LockOSThread()
	if err := rawSetns(target); err != nil {
		runtime.UnlockOSThread() // a failed setns changed nothing
		return -1, os.NewSyscallError("setns", err)
	}
	fd, err := socket()
	if err != nil {
		err = os.NewSyscallError("socket", err)
	}
	p.goHome()
	runtime.UnlockOSThread()
	return fd, err
}

// goHome returns the thread to probelet's own namespace. Going home is a
// setns into a namespace the process holds, with the right it has just
// used, so only the kernel's lack of memory fails it; a thread that cannot
// return must never run anything else, and the goroutine on it cannot be
// moved off it: the process exits (not a panic, which a recover could
// stop), as a restart costs the node less than a probe from the wrong
// namespace.
func (p *Pins) goHome() {
	var err error
	for range 3 {
		if err = rawSetns(p.home); err == nil {
			return
		}
	}
	fmt.Fprintf(os.Stderr, "podnet: a thread cannot leave a pod's network namespace (setns: %v); exiting rather than probe from it\n", err)
	os.Exit(2)
}

// Close releases n: sockets asked of it afterwards get ErrGone; those it
// made live on. Closing twice is a no-op.
func (n *Namespace) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.fd < 0 {
		return nil
	}
	err := unix.Close(n.fd)
	n.fd = -1
	n.pins.release(n.id)
	return err
}

func idOf(fd int) (ID, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return ID{}, os.NewSyscallError("fstat", err)
	}
	return ID{Dev: st.Dev, Ino: st.Ino}, nil
}

func statID(path string) (ID, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return ID{}, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	return ID{Dev: st.Dev, Ino: st.Ino}, nil
}
