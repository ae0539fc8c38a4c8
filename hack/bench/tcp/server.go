//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"strconv"

	"github.com/probelet/probelet/ebpf/ebpftest"
)

// serveArg runs this binary as the application side: it owns the network
// namespaces and listeners, accepts and closes connections, so that the
// prober process's CPU time measures only probing.
const serveArg = "-serve"

// pod is one namespace as the server reports it.
type pod struct {
	Path   string     `json:"path"`
	PodIP  netip.Addr `json:"podIP"`
	Ports  []int      `json:"ports"`  // reachable on PodIP
	Closed []int      `json:"closed"` // listening, but not on PodIP
	Bench  int        `json:"bench"`  // pod 0 only: the per-probe target, not simulated
}

type server struct {
	cmd   *exec.Cmd
	stdin io.Closer
	pods  []pod
}

// listenerShapes is the mix of listeners per namespace, cycled: mostly
// wildcard, some bound to 127.0.0.1 or IPv6-only (refused for the pod IP).
var listenerShapes = []ebpftest.ListenConfig{
	{Addr: netip.IPv4Unspecified()}, {Addr: netip.IPv4Unspecified()}, {Addr: netip.IPv4Unspecified()},
	{Addr: netip.IPv4Unspecified()}, {Addr: netip.IPv4Unspecified()}, {Addr: netip.IPv4Unspecified()},
	{Addr: netip.IPv4Unspecified()}, {Addr: netip.IPv4Unspecified()},
	{Addr: netip.MustParseAddr("127.0.0.1")},
	{Addr: netip.IPv6Unspecified(), V6Only: true},
}

func startServer(c config) (*server, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, serveArg, strconv.Itoa(c.netns), strconv.Itoa(c.listeners))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, stdin: stdin}
	if err := json.NewDecoder(stdout).Decode(&s.pods); err != nil {
		s.stop()
		return nil, fmt.Errorf("server did not report its namespaces: %w", err)
	}
	return s, nil
}

// stop tells the server to clean up (stdin EOF) and waits for it.
func (s *server) stop() {
	s.stdin.Close()
	s.cmd.Wait()
}

// serve is the server process: build, report, serve until stdin closes,
// clean up.
func serve(args []string) error {
	if len(args) != 2 {
		return errors.New("usage: -serve NETNS LISTENERS")
	}
	nNS, err1 := strconv.Atoi(args[0])
	nL, err2 := strconv.Atoi(args[1])
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	var nss []*ebpftest.NetNS
	defer func() {
		for _, ns := range nss {
			ns.Close()
		}
	}()
	pods := make([]pod, nNS)
	for i := range nNS {
		ns, err := ebpftest.NewNetNS(i)
		if err != nil {
			return err
		}
		nss = append(nss, ns)
		pods[i] = pod{Path: ns.Path, PodIP: ns.PodIP}
	}
	bench, err := nss[0].Listen(ebpftest.ListenConfig{Addr: netip.IPv4Unspecified()})
	if err != nil {
		return err
	}
	defer bench.Close()
	if err := bench.Serve(); err != nil {
		return err
	}
	pods[0].Bench = bench.Port
	for i := range nL {
		p := &pods[i%nNS]
		shape := listenerShapes[(i/nNS)%len(listenerShapes)]
		l, err := nss[i%nNS].Listen(shape)
		if err != nil {
			return err
		}
		defer l.Close()
		if err := l.Serve(); err != nil {
			return err
		}
		if shape.Addr.Is4() && shape.Addr.IsUnspecified() {
			p.Ports = append(p.Ports, l.Port)
		} else {
			p.Closed = append(p.Closed, l.Port)
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(pods); err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, bufio.NewReader(os.Stdin))
	return err
}
