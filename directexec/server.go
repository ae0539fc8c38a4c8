package directexec

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"sync"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// server is the helper started once (`probelet-exec serve`): each probe
// costs it a fork, where starting the helper per probe cost a program
// start-up (~0.7 ms of CPU here, a quarter of a probe). It is restarted
// when it dies; it exits when probelet closes its socket (or dies).
type server struct {
	helper string
	log    *zap.Logger

	mu   sync.Mutex
	fd   int // probelet's end of the SOCK_SEQPACKET socket; -1: not running
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd exited
}

func newServer(helper string, log *zap.Logger) *server {
	return &server{helper: helper, log: log, fd: -1}
}

// send hands one probe's control socket, stdout and stderr to the server,
// starting it (again) when needed.
func (s *server) send(ctl, stdout, stderr *os.File) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rights := unix.UnixRights(int(ctl.Fd()), int(stdout.Fd()), int(stderr.Fd()))
	for attempt := 0; ; attempt++ {
		if err := s.startLocked(); err != nil {
			return err
		}
		err := unix.Sendmsg(s.fd, []byte{'r'}, rights, nil, 0)
		if err == nil {
			return nil
		}
		s.stopLocked()
		if attempt > 0 {
			return fmt.Errorf("sending a probe to the exec helper: %w", err)
		}
	}
}

func (s *server) startLocked() error {
	if s.fd >= 0 {
		select {
		case <-s.done:
			s.stopLocked() // it died: start another
		default:
			return nil
		}
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("exec helper socket: %w", err)
	}
	theirs := os.NewFile(uintptr(fds[1]), "probelet-exec serve")
	defer theirs.Close()
	cmd := &exec.Cmd{Path: s.helper, Args: []string{HelperName, "serve"}, Env: []string{},
		Stdin: theirs, Stderr: logWriter{s.log}}
	if err := cmd.Start(); err != nil {
		unix.Close(fds[0])
		return fmt.Errorf("starting the exec helper: %w", err)
	}
	s.fd, s.cmd, s.done = fds[0], cmd, make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) {
		if err := cmd.Wait(); err != nil {
			s.log.Warn("The exec helper exited", zap.Error(err))
		}
		close(done)
	}(cmd, s.done)
	return nil
}

func (s *server) stopLocked() {
	if s.fd < 0 {
		return
	}
	unix.Close(s.fd) // the server reads EOF and exits; running probes finish
	s.fd = -1
	<-s.done
}

// close stops the server.
func (s *server) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopLocked()
}

// logWriter logs what the helper prints (only its own failures).
type logWriter struct{ log *zap.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	sc := bufio.NewScanner(bytes.NewReader(p))
	for sc.Scan() {
		w.log.Warn("Exec helper", zap.String("message", sc.Text()))
	}
	return len(p), nil
}
