package directexec

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"testing"
	"time"

	"go.uber.org/zap"
)

// TestServerAnswersAndOutlivesItsHelper sends probes through the whole
// path (probelet's fds over the server's socket, a forked child, its
// status line) and kills the helper between them: the next probe starts
// another. The probe names this test's own process with a wrong start
// time, which the helper must refuse as a container that is gone.
func TestServerAnswersAndOutlivesItsHelper(t *testing.T) {
	r := &Runner{srv: newServer(testHelper(t), zap.NewNop())}
	defer r.Close()
	var w records
	w.add('P', binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint32(nil, uint32(os.Getpid())), 1))
	w.add('U', make([]byte, 8))
	w.str('D', "/")
	p := &profile{pid: os.Getpid(), startTime: 1, static: w.bytes()}
	probe := func() {
		t.Helper()
		_, err := r.run(context.Background(), p, []string{"true"}, time.Second)
		if !errors.Is(err, errNotRunning) {
			t.Fatalf("run = %v, want the helper's answer: %v", err, errNotRunning)
		}
	}

	probe()
	r.srv.mu.Lock()
	first, done := r.srv.cmd.Process.Pid, r.srv.done
	if err := r.srv.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	r.srv.mu.Unlock()
	<-done
	probe()
	r.srv.mu.Lock()
	second := r.srv.cmd.Process.Pid
	r.srv.mu.Unlock()
	if second == first {
		t.Fatalf("the dead helper %d was not replaced", first)
	}

	r.Close()
	select {
	case <-r.srv.done:
	case <-time.After(5 * time.Second):
		t.Fatal("the helper still runs after Close")
	}
}
