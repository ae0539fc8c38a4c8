package ebpftest

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// NetNS is a network namespace reachable from the host like a pod: the
// host dials PodIP or PodIP6 over a veth pair.
type NetNS struct {
	// Name is the `ip netns` name; Path its bind mount (/run/netns/Name).
	Name, Path string
	// PodIP and PodIP6 are the namespace side's addresses.
	PodIP, PodIP6 netip.Addr
	hostIf        string
}

var (
	subnetOnce sync.Once
	subnet     int // third octet of this process's 10.231.x.0/24
	subnetErr  error
)

// NewNetNS creates namespace number id (0-62) of this process.
func NewNetNS(id int) (*NetNS, error) {
	if id < 0 || id > 62 {
		return nil, fmt.Errorf("ebpftest: netns id %d out of range 0-62", id)
	}
	subnetOnce.Do(func() { subnet, subnetErr = pickSubnet() })
	if subnetErr != nil {
		return nil, subnetErr
	}
	pid := os.Getpid()
	n := &NetNS{
		Name:   fmt.Sprintf("probelet-test-%d-%d", pid, id),
		PodIP:  netip.AddrFrom4([4]byte{10, 231, byte(subnet), byte(4*id + 2)}),
		PodIP6: netip.MustParseAddr(fmt.Sprintf("fd00:231:%x:%x::2", subnet, id)),
		hostIf: fmt.Sprintf("plh%05x%02d", pid&0xfffff, id),
	}
	n.Path = "/run/netns/" + n.Name
	if err := n.setup(id); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

func (n *NetNS) setup(id int) error {
	podIf := "eth0"
	host4 := fmt.Sprintf("10.231.%d.%d/30", subnet, 4*id+1)
	host6 := fmt.Sprintf("fd00:231:%x:%x::1/64", subnet, id)
	cmds := [][]string{
		{"netns", "add", n.Name},
		{"link", "add", n.hostIf, "type", "veth", "peer", "name", podIf, "netns", n.Name},
		{"addr", "add", host4, "dev", n.hostIf},
		{"addr", "add", host6, "dev", n.hostIf, "nodad"},
		{"link", "set", n.hostIf, "up"},
		{"-n", n.Name, "addr", "add", n.PodIP.String() + "/30", "dev", podIf},
		{"-n", n.Name, "addr", "add", n.PodIP6.String() + "/64", "dev", podIf, "nodad"},
		{"-n", n.Name, "link", "set", podIf, "up"},
		{"-n", n.Name, "link", "set", "lo", "up"},
	}
	for _, c := range cmds {
		if err := ip(c...); err != nil {
			return err
		}
	}
	return n.waitUp(podIf)
}

// linkUpTimeout bounds waiting for a new veth pair to carry packets.
const linkUpTimeout = 5 * time.Second

// waitUp waits until both ends of the veth pair are operationally up: the
// kernel turns the carrier on asynchronously (linkwatch, up to a second
// later), and packets sent before are dropped.
func (n *NetNS) waitUp(podIf string) error {
	deadline := time.Now().Add(linkUpTimeout)
	for {
		host, err1 := exec.Command("ip", "-o", "link", "show", "dev", n.hostIf).Output()
		pod, err2 := exec.Command("ip", "-n", n.Name, "-o", "link", "show", "dev", podIf).Output()
		if err1 == nil && err2 == nil && strings.Contains(string(host), "state UP") && strings.Contains(string(pod), "state UP") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ebpftest: veth %s of %s not up after %v", n.hostIf, n.Name, linkUpTimeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Close deletes the namespace and the host end of its veth pair. The
// kernel removes that end by itself once the namespace's end is gone, in
// the background: the link may vanish before "ip link del" looks it up
// ("Cannot find device") or between its lookup and its delete ("No such
// device", seen under load). Either way it is gone.
func (n *NetNS) Close() error {
	err := ip("netns", "del", n.Name)
	if lerr := ip("link", "del", n.hostIf); lerr != nil && !linkGone(lerr) {
		err = errors.Join(err, lerr)
	}
	return err
}

func linkGone(err error) bool {
	return strings.Contains(err.Error(), "Cannot find device") || strings.Contains(err.Error(), "No such device")
}

func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// pickSubnet chooses a 10.231.x.0/24 no route on the host uses yet, so
// concurrent test processes keep apart.
func pickSubnet() (int, error) {
	out, err := exec.Command("ip", "-4", "route", "show").Output()
	if err != nil {
		return 0, fmt.Errorf("ebpftest: ip route: %w", err)
	}
	start := os.Getpid() % 256
	for i := range 256 {
		x := (start + i) % 256
		if !strings.Contains(string(out), fmt.Sprintf("10.231.%d.", x)) {
			return x, nil
		}
	}
	return 0, errors.New("ebpftest: no free 10.231.x.0/24")
}
