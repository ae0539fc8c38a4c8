package plugin

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"

	"github.com/containerd/nri/pkg/api"
	nrinet "github.com/containerd/nri/pkg/net"
)

// dial opens the connection one registration runs over: the runtime's
// socket, or for a launched plugin the connected socket the runtime passed.
// The plugin opens it rather than the stub so that it can see the runtime
// hang up, and hang up itself, while the stub is stuck (see start).
func (p *Plugin) dial() (*watchedConn, error) {
	var c net.Conn
	var err error
	if p.launched {
		c, err = inheritedConn()
	} else {
		c, err = net.Dial("unix", p.socket)
	}
	if err != nil {
		return nil, fmt.Errorf("connect to the runtime over NRI: %w", err)
	}
	return &watchedConn{Conn: c, gone: make(chan struct{})}, nil
}

// inheritedConn is the socket a launching runtime passed in the
// environment (what the stub itself would use).
func inheritedConn() (net.Conn, error) {
	env := os.Getenv(api.PluginSocketEnvVar)
	fd, err := strconv.Atoi(env)
	if err != nil {
		return nil, fmt.Errorf("%s=%q is not a file descriptor: %w", api.PluginSocketEnvVar, env, err)
	}
	return nrinet.NewFdConn(fd)
}

// watchedConn is the connection to the runtime; gone is closed once a read
// fails (the runtime hung up) or the connection is closed. The NRI
// multiplexer reads it all the time, so a hang-up shows at once.
type watchedConn struct {
	net.Conn
	once sync.Once
	gone chan struct{}
}

// Read reads from the runtime and notes when it hung up.
func (c *watchedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil {
		c.markGone()
	}
	return n, err
}

// Close closes the connection.
func (c *watchedConn) Close() error {
	c.markGone()
	return c.Conn.Close()
}

func (c *watchedConn) markGone() { c.once.Do(func() { close(c.gone) }) }
