package server_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/probelet/probelet/cri/server"
	"github.com/probelet/probelet/cri/server/servertest"
)

func newServer(t *testing.T) *server.Server {
	t.Helper()
	srv, err := server.New(servertest.NewStatus(), servertest.NewView())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { release(srv) })
	return srv
}

// release ends a server that may have listened and never served: Serve
// with a context that has already ended releases the socket at once.
func release(srv *server.Server) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = srv.Serve(ctx) // "Serve called before Listen" when it never listened
}

// TestSocketPath: the listen address follows internal/endpoint's rule and
// its errors say which address it was.
func TestSocketPath(t *testing.T) {
	if got, err := server.SocketPath("unix:///run/probelet/../probelet.sock"); err != nil || got != "/run/probelet.sock" {
		t.Errorf("SocketPath = %q, %v; want /run/probelet.sock", got, err)
	}
	if _, err := server.SocketPath("tcp://127.0.0.1:80"); err == nil || !strings.Contains(err.Error(), "listen address") {
		t.Errorf("SocketPath(tcp://...) = %v; want an error naming the listen address", err)
	}
}

func TestListenPermissions(t *testing.T) {
	dir := filepath.Join(servertest.SocketDir(t), "run", "probelet")
	path := filepath.Join(dir, "probelet.sock")
	srv := newServer(t)
	if err := srv.Listen("unix://" + path); err != nil {
		t.Fatal(err)
	}
	assertMode(t, dir, os.ModeDir|0o750)
	assertMode(t, path, os.ModeSocket|0o660)
	fi, _ := os.Stat(path)
	if st := fi.Sys().(*syscall.Stat_t); os.Geteuid() == 0 && (st.Uid != 0 || st.Gid != 0) {
		t.Errorf("socket owned by %d:%d, want 0:0", st.Uid, st.Gid)
	}
}

func TestListenSocketGroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown needs root")
	}
	path := filepath.Join(servertest.SocketDir(t), "p.sock")
	srv, err := server.New(servertest.NewStatus(), servertest.NewView(), server.WithSocketGroup(4242))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { release(srv) })
	if err := srv.Listen("unix://" + path); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(path)
	if gid := fi.Sys().(*syscall.Stat_t).Gid; gid != 4242 {
		t.Errorf("socket group %d, want 4242", gid)
	}
}

func assertMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode() & (os.ModeType | os.ModePerm); got != want {
		t.Errorf("%s mode %v, want %v", path, got, want)
	}
}

func TestListenRefusesLiveSocket(t *testing.T) {
	path := filepath.Join(servertest.SocketDir(t), "p.sock")
	live, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	err = newServer(t).Listen("unix://" + path)
	if err == nil || !strings.Contains(err.Error(), "in use by another process") {
		t.Fatalf("Listen over a live socket: %v; want an in-use error", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the live socket was removed: %v", err)
	}
}

func TestListenRefusesSecondServer(t *testing.T) {
	_, endpoint := servertest.Start(t, servertest.NewStatus(), servertest.NewView())
	err := newServer(t).Listen(endpoint)
	if err == nil || !strings.Contains(err.Error(), "is probelet already running?") {
		t.Fatalf("second Listen: %v; want an in-use error", err)
	}
}

func TestListenReplacesStaleSocket(t *testing.T) {
	path := filepath.Join(servertest.SocketDir(t), "p.sock")
	stale, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	stale.SetUnlinkOnClose(false)
	stale.Close() // the file stays, nobody listens: a crashed daemon's socket
	srv := newServer(t)
	if err := srv.Listen("unix://" + path); err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("dial the new socket: %v", err)
	}
	conn.Close()
}

func TestListenRefusesNonSocket(t *testing.T) {
	path := filepath.Join(servertest.SocketDir(t), "p.sock")
	if err := os.WriteFile(path, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := newServer(t).Listen("unix://" + path)
	if err == nil || !strings.Contains(err.Error(), "is not a socket") {
		t.Fatalf("Listen over a file: %v; want a not-a-socket error", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "precious" {
		t.Fatal("the file was touched")
	}
}

func TestStopRemovesOnlyOwnSocket(t *testing.T) {
	srv, endpoint := servertest.Start(t, servertest.NewStatus(), servertest.NewView())
	path, _ := server.SocketPath(endpoint)
	srv.Stop()
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Fatalf("socket left after Stop: %v", err)
	}

	// A successor took the path over before we stopped: leave its socket.
	srv2 := newServer(t)
	if err := srv2.Listen(endpoint); err != nil {
		t.Fatal(err)
	}
	os.Remove(path)
	successor, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer successor.Close()
	release(srv2)
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("Stop removed a socket it did not create: %v", err)
	}
}

func TestServeErrors(t *testing.T) {
	srv := newServer(t)
	if err := srv.Serve(context.Background()); err == nil {
		t.Fatal("Serve before Listen succeeded")
	}
	if _, err := server.New(nil, servertest.NewView()); err == nil {
		t.Fatal("New with a nil status source succeeded")
	}
	if _, err := server.New(servertest.NewStatus(), servertest.NewView(), server.WithStreamQueue(0)); err == nil {
		t.Fatal("New with a zero stream queue succeeded")
	}
}
