package cli_test

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/probelet/probelet/cmd/probectl/internal/cli"
	"github.com/probelet/probelet/cri/server/servertest"
)

func TestUsageAndNotFound(t *testing.T) {
	_, endpoint, _, _ := servertest.StartFixture(t)
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"unknown container", []string{"describe", "ffff"}, cli.ExitNotFound, `container "ffff" not found`},
		{"unknown pod/container", []string{"why", "web/nope"}, cli.ExitNotFound, "not found"},
		{"ambiguous prefix", []string{"describe", "a"}, cli.ExitUsage, "ambiguous, it matches: a100000000000 (default/web/app), a200000000000 (default/web/sidecar)"},
		{"malformed reference", []string{"why", "a//b"}, cli.ExitUsage, "empty part"},
		{"missing argument", []string{"describe"}, cli.ExitUsage, "missing CONTAINER"},
		{"extra argument", []string{"why", "a", "b"}, cli.ExitUsage, "too many arguments"},
		{"bad output", []string{"ps", "-o", "xml"}, cli.ExitUsage, `--output "xml" is not supported here; use one of: wide, json, yaml`},
		{"wide describe", []string{"describe", "b1", "-o", "wide"}, cli.ExitUsage, "not supported"},
		{"quiet with output", []string{"ps", "-q", "-o", "json"}, cli.ExitUsage, "cannot be combined"},
		{"unknown flag", []string{"ps", "--bogus"}, cli.ExitUsage, "unknown flag: --bogus"},
		{"unknown command", []string{"restart"}, cli.ExitUsage, `unknown command "restart"`},
		{"negative history", []string{"describe", "b1", "--history", "-1"}, cli.ExitUsage, "must not be negative"},
		{"zero timeout", []string{"ps", "--timeout", "0s"}, cli.ExitUsage, "--timeout must be positive"},
		{"tcp socket", []string{"ps", "--socket", "tcp://127.0.0.1:1"}, cli.ExitUsage, "only unix:// endpoints are supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := probectl(t, endpoint, tt.args...)
			if r.code != tt.code || !strings.Contains(r.errOut, tt.msg) {
				t.Fatalf("exit %d, stderr %q; want exit %d mentioning %q", r.code, r.errOut, tt.code, tt.msg)
			}
			if !strings.HasPrefix(r.errOut, "probectl: ") {
				t.Errorf("stderr %q lacks the probectl: prefix", r.errOut)
			}
			if r.out != "" {
				t.Errorf("stdout %q on error", r.out)
			}
		})
	}
}

func TestSocketProblems(t *testing.T) {
	dir := servertest.SocketDir(t)
	missing := filepath.Join(dir, "missing.sock")

	stale := filepath.Join(dir, "stale.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()

	garbage := filepath.Join(dir, "garbage.sock")
	serveGarbage(t, garbage, []byte("SSH-2.0-OpenSSH_9.2\r\nthis is not HTTP/2\r\n"))
	silent := filepath.Join(dir, "silent.sock")
	serveGarbage(t, silent, nil)

	regular := filepath.Join(dir, "file")
	if err := os.WriteFile(regular, nil, 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		socket string
		args   []string
		msg    string
	}{
		{"no socket", missing, nil, "is probelet running? no socket at " + missing},
		{"stale socket", stale, nil, "is probelet running? nothing listens on " + stale},
		{"garbage peer", garbage, nil, "did not answer as probelet's gRPC API"},
		{"silent peer", silent, []string{"--timeout", "300ms"}, "did not answer within 300ms"},
		{"not a socket", regular, nil, regular + " is not a socket"},
	}
	for _, tt := range tests {
		for _, cmd := range [][]string{{"ps"}, {"describe", "x"}, {"watch"}, {"events", "-f"}, {"version"}} {
			t.Run(tt.name+"/"+cmd[0], func(t *testing.T) {
				args := append(append(append([]string{}, cmd...), tt.args...), "--socket", "unix://"+tt.socket)
				r := probectl(t, "", args...)
				if r.code != cli.ExitError || !strings.Contains(r.errOut, tt.msg) {
					t.Fatalf("exit %d, stderr %q; want exit 1 mentioning %q", r.code, r.errOut, tt.msg)
				}
			})
		}
	}
}

// serveGarbage listens on path and answers every connection with reply
// (or, if nil, holds it open silently) until the test ends.
func serveGarbage(t *testing.T, path string, reply []byte) {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if reply != nil {
					_, _ = c.Write(reply)
					return
				}
				_, _ = io.Copy(io.Discard, c) // never answer
			}()
		}
	}()
}

func TestSocketFlagBeatsEnv(t *testing.T) {
	_, endpoint, _, _ := servertest.StartFixture(t)
	missing := "unix://" + filepath.Join(servertest.SocketDir(t), "nope.sock")
	// The env points nowhere; the flag wins.
	r := probectlCtx(context.Background(), missing, nil, "ps", "-q", "--socket", endpoint)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	// The env alone is used.
	if r := probectl(t, missing, "ps"); r.code != cli.ExitError || !strings.Contains(r.errOut, "no socket at") {
		t.Fatalf("with a bad PROBELET_SOCKET: exit %d, %q", r.code, r.errOut)
	}
	// Neither: the default path (absent on a test machine without probelet).
	if _, err := os.Stat("/run/probelet/probelet.sock"); err == nil {
		t.Skip("a real probelet runs here")
	}
	if r := probectl(t, "", "ps"); !strings.Contains(r.errOut, "no socket at /run/probelet/probelet.sock") {
		t.Fatalf("default socket: %q", r.errOut)
	}
}

func TestVersionClientOnly(t *testing.T) {
	r := probectl(t, "", "version", "--client")
	if r.code != 0 || r.out != "Client Version: dev\n" {
		t.Fatalf("exit %d, out %q, err %q", r.code, r.out, r.errOut)
	}
}
