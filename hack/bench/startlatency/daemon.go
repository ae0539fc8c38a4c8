package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	apiv1 "github.com/probelet/probelet/api/v1alpha1"
)

// daemon is the probelet process under test.
type daemon struct {
	cmd     *exec.Cmd
	done    chan error
	log     string
	metrics string
	conn    *grpc.ClientConn
	api     apiv1.ProbeletClient
}

// buildProbelet builds cmd/probelet into dir.
func buildProbelet(ctx context.Context, root, dir string) (string, error) {
	out := filepath.Join(dir, "probelet")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-tags", "grpcnotrace", "-o", out, "./cmd/probelet")
	cmd.Dir = root
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/probelet: %w\n%s", err, msg)
	}
	return out, nil
}

// startDaemon runs probelet against the bed and waits until it is
// registered over NRI.
func startDaemon(ctx context.Context, bin string, b *bed) (*daemon, error) {
	sock := filepath.Join(b.dir, "probelet.sock")
	d := &daemon{log: filepath.Join(b.dir, "probelet.log"), done: make(chan error, 1)}
	logFile, err := os.Create(d.log)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	d.cmd = exec.Command(bin, "--nri-socket", b.nri, "--runtime-endpoint", b.cri,
		"--listen", "unix://"+sock, "--metrics-bind-address", "127.0.0.1:0", "--state-dir", filepath.Join(b.dir, "state"))
	d.cmd.Stdout, d.cmd.Stderr = logFile, logFile
	if err := d.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { d.done <- d.cmd.Wait() }()
	if d.conn, err = grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
		d.stop()
		return nil, err
	}
	d.api = apiv1.NewProbeletClient(d.conn)
	if err := d.waitReady(ctx); err != nil {
		d.stop()
		return nil, err
	}
	return d, nil
}

var metricsAddr = regexp.MustCompile(`Serving /metrics and /healthz.*"address": ?"([^"]+)"`)

func (d *daemon) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-d.done:
			return fmt.Errorf("probelet exited: %v; see %s", err, d.log)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if d.metrics == "" {
			if data, err := os.ReadFile(d.log); err == nil {
				if m := metricsAddr.FindSubmatch(data); m != nil {
					d.metrics = string(m[1])
				}
			}
		}
		v, err := d.api.Version(ctx, &apiv1.VersionRequest{})
		if err == nil && v.GetNriConnected() && d.metrics != "" {
			return nil
		}
	}
	return fmt.Errorf("probelet not registered over NRI after 20s; see %s", d.log)
}

// stop ends probelet with SIGTERM.
func (d *daemon) stop() {
	if d.conn != nil {
		d.conn.Close()
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(10 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.done
	}
}

// metricsText fetches /metrics.
func (d *daemon) metricsText(ctx context.Context) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+d.metrics+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, err = b.ReadFrom(resp.Body)
	return b.Bytes(), err
}
