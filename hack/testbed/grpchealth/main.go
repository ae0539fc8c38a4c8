// Command grpc-health is the test bed image's gRPC health server, written
// with the standard library only (like every image source here, it builds
// outside the module): unencrypted HTTP/2 (Go 1.24's
// Protocols.SetUnencryptedHTTP2) answering grpc.health.v1.Health/Check with
// a fixed status, enough for the kubelet's and probelet's gRPC probes.
//
//	grpc-health -port 9090 [-status SERVING|NOT_SERVING] [-hang] [-hostile MODE]
//	grpc-health -slow-clients HOST:PORT [-per-kind N]
//
// -hang accepts connections and never answers: a target that hangs.
// -hostile plays a hostile target (hostile.go): ping-flood, header-flood,
// data-flood or goaway on HTTP/2, or full-backlog, a port whose TCP
// handshake never completes. -slow-clients holds connections to an HTTP
// port without finishing a request (slowclients.go).
package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
)

// Health status values of grpc.health.v1.HealthCheckResponse.
var statuses = map[string]byte{"SERVING": 1, "NOT_SERVING": 2}

func main() {
	port := flag.Int("port", 9090, "port to listen on")
	status := flag.String("status", "SERVING", "SERVING or NOT_SERVING")
	hang := flag.Bool("hang", false, "accept connections and never answer")
	hostile := flag.String("hostile", "", "ping-flood, header-flood, data-flood, empty-data-flood, empty-continuation-flood, window-update-flood, goaway or full-backlog")
	slow := flag.String("slow-clients", "", "HOST:PORT: hold connections to this HTTP port, -per-kind of each slow kind, instead of serving")
	perKind := flag.Int("per-kind", 10, "with -slow-clients, connections of each kind")
	flag.Parse()
	if *slow != "" {
		slowClients(*slow, *perKind)
	}
	code, ok := statuses[*status]
	if !ok {
		fmt.Fprintf(os.Stderr, "grpc-health: unknown status %q\n", *status)
		os.Exit(2)
	}
	if *hostile == "full-backlog" {
		fullBacklog(*port)
	}
	ln, err := net.Listen("tcp", fmt.Sprintf(":%d", *port))
	if err != nil {
		log.Fatal(err)
	}
	if *hang {
		holdForever(ln)
	}
	if *hostile != "" {
		serveHostile(ln, *hostile)
	}
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: handler(code), Protocols: &protocols}
	log.Fatal(srv.Serve(ln))
}

// handler answers Health/Check with status code; any other method is
// Unimplemented (grpc-status 12), as a real gRPC server says.
func handler(code byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/grpc")
		w.Header().Set("Trailer", "Grpc-Status")
		if r.URL.Path != "/grpc.health.v1.Health/Check" {
			w.WriteHeader(http.StatusOK)
			w.Header().Set("Grpc-Status", "12")
			return
		}
		// HealthCheckResponse{status: code}: field 1, varint.
		msg := []byte{0x08, code}
		frame := make([]byte, 5, 5+len(msg))
		binary.BigEndian.PutUint32(frame[1:], uint32(len(msg)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(append(frame, msg...))
		w.Header().Set("Grpc-Status", "0")
	}
}

// holdForever accepts connections and keeps them open, silent: each is
// read until the client gives up.
func holdForever(ln net.Listener) {
	serveEach(ln, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) })
}

// serveEach runs handle on each connection ln accepts, on a goroutine of
// its own, and closes the connection after it.
func serveEach(ln net.Listener, handle func(net.Conn)) {
	for {
		c, err := ln.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go func() {
			defer c.Close()
			handle(c)
		}()
	}
}
