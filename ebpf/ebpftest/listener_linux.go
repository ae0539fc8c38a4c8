package ebpftest

import (
	"fmt"
	"net"
	"net/netip"
	"os"

	"golang.org/x/sys/unix"

	"github.com/probelet/probelet/ebpf/netns"
)

// ListenConfig describes a listening socket.
type ListenConfig struct {
	// Addr is the address to bind; ignored with NoBind. An IPv6 (or
	// v4-mapped) address makes an AF_INET6 socket.
	Addr netip.Addr
	// Port to bind; 0 picks one.
	Port int
	// Backlog for listen(); 0 means 128.
	Backlog int
	// V6Only sets IPV6_V6ONLY; ReusePort sets SO_REUSEPORT.
	V6Only, ReusePort bool
	// NoBind calls listen() on an unbound socket (the kernel picks the port
	// and binds the wildcard address).
	NoBind bool
	// Device binds the socket to an interface (SO_BINDTODEVICE).
	Device string
}

// Listener is a listening socket in some network namespace.
type Listener struct {
	fd int
	ln net.Listener // set by Serve
	// Port is the bound port.
	Port int
}

// Listen creates the socket inside the namespace at nsPath ("" for the
// caller's own).
func Listen(nsPath string, c ListenConfig) (*Listener, error) {
	if nsPath == "" {
		return listen(c)
	}
	var l *Listener
	err := netns.Do(nsPath, func() error {
		var err error
		l, err = listen(c)
		return err
	})
	return l, err
}

// Listen creates a listening socket in n.
func (n *NetNS) Listen(c ListenConfig) (*Listener, error) { return Listen(n.Path, c) }

func listen(c ListenConfig) (*Listener, error) {
	family := unix.AF_INET
	if c.Addr.Is6() {
		family = unix.AF_INET6
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	l := &Listener{fd: fd}
	if err := l.setup(c, family); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return l, nil
}

func (l *Listener) setup(c ListenConfig, family int) error {
	if err := setOptions(l.fd, c, family); err != nil {
		return err
	}
	if !c.NoBind {
		if err := unix.Bind(l.fd, sockaddr(c.Addr, c.Port)); err != nil {
			return fmt.Errorf("bind %s:%d: %w", c.Addr, c.Port, err)
		}
	}
	backlog := c.Backlog
	if backlog == 0 {
		backlog = 128
	}
	if err := unix.Listen(l.fd, backlog); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	sa, err := unix.Getsockname(l.fd)
	if err != nil {
		return fmt.Errorf("getsockname: %w", err)
	}
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		l.Port = a.Port
	case *unix.SockaddrInet6:
		l.Port = a.Port
	}
	return nil
}

func setOptions(fd int, c ListenConfig, family int) error {
	opts := []struct {
		on          bool
		level, name int
		desc        string
	}{
		{true, unix.SOL_SOCKET, unix.SO_REUSEADDR, "SO_REUSEADDR"},
		{c.ReusePort, unix.SOL_SOCKET, unix.SO_REUSEPORT, "SO_REUSEPORT"},
		{family == unix.AF_INET6, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, "IPV6_V6ONLY"},
	}
	for _, o := range opts {
		if !o.on {
			continue
		}
		v := 1
		if o.name == unix.IPV6_V6ONLY && !c.V6Only {
			v = 0
		}
		if err := unix.SetsockoptInt(fd, o.level, o.name, v); err != nil {
			return fmt.Errorf("setsockopt %s: %w", o.desc, err)
		}
	}
	if c.Device != "" {
		if err := unix.BindToDevice(fd, c.Device); err != nil {
			return fmt.Errorf("SO_BINDTODEVICE %s: %w", c.Device, err)
		}
	}
	return nil
}

func sockaddr(a netip.Addr, port int) unix.Sockaddr {
	if a.Is6() {
		return &unix.SockaddrInet6{Addr: a.As16(), Port: port}
	}
	return &unix.SockaddrInet4{Addr: a.As4(), Port: port}
}

// Accept takes one connection off the accept queue and closes it.
func (l *Listener) Accept() error {
	nfd, _, err := unix.Accept(l.fd)
	if err != nil {
		return fmt.Errorf("accept: %w", err)
	}
	return unix.Close(nfd)
}

// Shutdown calls shutdown(SHUT_RD) on the listener, which stops it
// listening while the descriptor stays open.
func (l *Listener) Shutdown() error { return unix.Shutdown(l.fd, unix.SHUT_RD) }

// Serve accepts and at once closes every connection, like an application
// that answers and hangs up, until Close. Probe connections then end in
// TIME_WAIT on the prober's side, as they do against real servers.
func (l *Listener) Serve() error {
	fd, err := unix.Dup(l.fd)
	if err != nil {
		return fmt.Errorf("dup: %w", err)
	}
	f := os.NewFile(uintptr(fd), "listener")
	defer f.Close()
	ln, err := net.FileListener(f)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	l.ln = ln
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return nil
}

// Close closes the socket.
func (l *Listener) Close() error {
	if l.ln != nil {
		l.ln.Close()
	}
	return unix.Close(l.fd)
}
