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
	var closers []io.Closer
	defer func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i].Close()
		}
	}()
	nss, pods, err := buildNamespaces(nNS, &closers)
	if err != nil {
		return err
	}
	if err := buildListeners(nss, pods, nL, &closers); err != nil {
		return err
	}
	if err := json.NewEncoder(os.Stdout).Encode(pods); err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, bufio.NewReader(os.Stdin))
	return err
}

func buildNamespaces(n int, closers *[]io.Closer) ([]*ebpftest.NetNS, []pod, error) {
	nss := make([]*ebpftest.NetNS, n)
	pods := make([]pod, n)
	for i := range n {
		ns, err := ebpftest.NewNetNS(i)
		if err != nil {
			return nil, nil, err
		}
		*closers = append(*closers, ns)
		nss[i], pods[i] = ns, pod{Path: ns.Path, PodIP: ns.PodIP}
	}
	return nss, pods, nil
}

// buildListeners opens the per-probe target in pod 0, then n listeners
// round robin over the namespaces, shapes cycling per round.
func buildListeners(nss []*ebpftest.NetNS, pods []pod, n int, closers *[]io.Closer) error {
	listen := func(ns *ebpftest.NetNS, c ebpftest.ListenConfig) (int, error) {
		l, err := ns.Listen(c)
		if err != nil {
			return 0, err
		}
		*closers = append(*closers, l)
		return l.Port, l.Serve()
	}
	var err error
	if pods[0].Bench, err = listen(nss[0], ebpftest.ListenConfig{Addr: netip.IPv4Unspecified()}); err != nil {
		return err
	}
	for i := range n {
		p := &pods[i%len(nss)]
		shape := listenerShapes[(i/len(nss))%len(listenerShapes)]
		port, err := listen(nss[i%len(nss)], shape)
		if err != nil {
			return err
		}
		if shape.Addr.Is4() && shape.Addr.IsUnspecified() {
			p.Ports = append(p.Ports, port)
		} else {
			p.Closed = append(p.Closed, port)
		}
	}
	return nil
}
