package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// Slow clients (issue 41): what a pod can do to an HTTP port it reaches —
// hold connections without finishing a request. Each connection's life
// ends when the server closes it; the client reports how long it lasted
// ("held MILLISECONDS KIND") and opens the next at once.
var slowKinds = map[string]func(c net.Conn) error{
	// A request header trickled a line a second, never ended.
	"header": func(c net.Conn) error {
		return trickle(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n", "X-Slow: 1\r\n")
	},
	// A body promised and trickled a byte a second.
	"body": func(c net.Conn) error {
		return trickle(c, "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n", "x")
	},
	// A connection that never sends a byte.
	"idle": func(net.Conn) error { select {} },
}

// trickle writes first, then again every second.
func trickle(c net.Conn, first, again string) error {
	if _, err := io.WriteString(c, first); err != nil {
		return err
	}
	for {
		time.Sleep(time.Second)
		if _, err := io.WriteString(c, again); err != nil {
			return err
		}
	}
}

// slowClients keeps perKind connections of every kind open to addr, for
// ever, each reopened once the server ends it.
func slowClients(addr string, perKind int) {
	var out sync.Mutex
	for kind, play := range slowKinds {
		for range perKind {
			go func() {
				for {
					start := time.Now()
					c, err := net.Dial("tcp", addr)
					if err != nil {
						time.Sleep(100 * time.Millisecond)
						continue
					}
					go func() { _ = play(c) }()
					// The server's close: reading ends (whatever it
					// answered before).
					_, _ = io.Copy(io.Discard, c)
					_ = c.Close()
					out.Lock()
					fmt.Fprintf(os.Stdout, "held %d %s\n", time.Since(start).Milliseconds(), kind)
					out.Unlock()
				}
			}()
		}
	}
	select {}
}
