//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

const serveArg = "serve"

// targets is the process serving every kind's target on loopback: its CPU
// is not the agents'.
type targets struct {
	cmd   *exec.Cmd
	stdin io.Closer
	ports map[string]int
}

func startTargets(ctx context.Context) (*targets, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, self, serveArg)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	t := &targets{cmd: cmd, stdin: stdin}
	line, err := bufio.NewReader(stdout).ReadBytes('\n')
	if err == nil {
		err = json.Unmarshal(line, &t.ports)
	}
	if err != nil {
		t.stop()
		return nil, fmt.Errorf("targets: %w", err)
	}
	return t, nil
}

// stop ends the targets process: it exits when its stdin closes.
func (t *targets) stop() {
	_ = t.stdin.Close()
	_ = t.cmd.Wait()
}

// serve listens for every kind, prints the ports and serves until stdin
// closes.
func serve() error {
	listen := func() (net.Listener, error) { return net.Listen("tcp4", "127.0.0.1:0") }
	tcp, err := listen()
	if err != nil {
		return err
	}
	go func() {
		for {
			c, err := tcp.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	web, err := listen()
	if err != nil {
		return err
	}
	go func() {
		_ = http.Serve(web, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	}()
	rpc, err := listen()
	if err != nil {
		return err
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go func() { _ = srv.Serve(rpc) }()
	port := func(l net.Listener) int { return l.Addr().(*net.TCPAddr).Port }
	if err := json.NewEncoder(os.Stdout).Encode(map[string]int{"tcp": port(tcp), "http": port(web), "grpc": port(rpc)}); err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	return nil
}
