//go:build linux

package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// appArg runs this binary as the pods' app: a static build is mounted into
// every pod (hostPath) and serves what each probe kind asks for, so one pod
// spec fits every kind.
const appArg = "-app"

// serveApp accepts and closes TCP connections on tcpPort, answers GET with
// 200 "ok" on httpPort and SERVING on grpcPort, until SIGTERM.
func serveApp() error {
	tcp, err := net.Listen("tcp", fmt.Sprintf(":%d", tcpPort))
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
	web, err := net.Listen("tcp", fmt.Sprintf(":%d", httpPort))
	if err != nil {
		return err
	}
	go func() {
		_ = http.Serve(web, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte("ok"))
		}))
	}()
	gl, err := net.Listen("tcp", fmt.Sprintf(":%d", grpcPort))
	if err != nil {
		return err
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer()) // "" is SERVING
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(gl) }()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	select {
	case <-sig:
		srv.Stop()
		return nil
	case err := <-errc:
		if errors.Is(err, grpc.ErrServerStopped) {
			return nil
		}
		return err
	}
}
