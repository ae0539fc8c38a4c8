package proxy_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/probelet/probelet/cri/proxy"
)

// TestListenTakesTheSocketSystemdPassed runs itself as a child that gets
// a listening socket as fd 3 with LISTEN_FDS=1 (what systemd's socket
// activation hands a service); the child's Listen must serve that socket,
// and releasing it must leave the file for the next instance.
func TestListenTakesTheSocketSystemdPassed(t *testing.T) {
	if os.Getenv("PROXY_LISTEN_CHILD") != "" {
		listenChild()
		return
	}
	sock, f := heldSocket(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestListenTakesTheSocketSystemdPassed$")
	cmd.Env = append(os.Environ(), "PROXY_LISTEN_CHILD="+sock, "LISTEN_FDS=1")
	cmd.ExtraFiles = []*os.File{f}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if _, err := os.Stat(sock); err != nil {
		t.Errorf("the socket file is gone after the child released it: %v", err)
	}
	// The socket still accepts: held by the parent as by systemd.
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatalf("dial after the child exited: %v", err)
	}
	c.Close()
}

// listenChild is the activated service: it sets LISTEN_PID to itself as
// systemd does after fork, takes the socket and accepts one connection.
func listenChild() {
	sock := os.Getenv("PROXY_LISTEN_CHILD")
	os.Setenv("LISTEN_PID", strconv.Itoa(os.Getpid()))
	l, release, activated, err := proxy.Listen("unix://" + sock)
	if err != nil || !activated {
		fail("Listen = activated %v, %v", activated, err)
	}
	if os.Getenv("LISTEN_FDS") != "" {
		fail("LISTEN_FDS still set for children")
	}
	go func() {
		c, err := net.Dial("unix", sock)
		if err == nil {
			c.Close()
		}
	}()
	c, err := l.Accept()
	if err != nil {
		fail("accept: %v", err)
	}
	c.Close()
	release()
}

func fail(format string, args ...any) {
	os.Stderr.WriteString("child: " + sprintf(format, args...) + "\n")
	os.Exit(1)
}

// TestListenCreatesAndRemovesItsOwnSocket: without systemd the socket is
// made (mode 0660) and removed on release.
func TestListenCreatesAndRemovesItsOwnSocket(t *testing.T) {
	dir, err := os.MkdirTemp("", "pxy")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "sub", "cri.sock")
	_, release, activated, err := proxy.Listen("unix://" + sock)
	if err != nil || activated {
		t.Fatalf("Listen = activated %v, %v", activated, err)
	}
	fi, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o660 {
		t.Errorf("socket mode %v, want 0660", fi.Mode().Perm())
	}
	release()
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("socket left after release: %v", err)
	}
	if _, _, _, err := proxy.Listen("tcp://1.2.3.4:5"); err == nil {
		t.Error("a tcp endpoint was accepted")
	}
}
