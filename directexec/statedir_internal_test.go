package directexec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/probelet/probelet/internal/runtimestate"
)

// The state directory is learned again when the one in use holds no
// bundles (containerd was down when the runner started, or moved), at
// most every relearnEvery; a container without a bundle in the right one
// is reason bundle, not state; CRI-O sends every exec to the runtime.
func TestStateDirLearnsAgain(t *testing.T) {
	right := t.TempDir()
	bundle := filepath.Join(right, containerdTaskDir, "k8s.io", "c1")
	if err := os.MkdirAll(bundle, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bundle, "config.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	wrong := t.TempDir() // the default, where this runtime keeps nothing
	type answer struct {
		dir string
		err error
	}
	tests := []struct {
		name    string
		learn   []answer // what each ask answers; nil: no learner (fixed)
		id      string
		step    time.Duration // between the two execs
		want    []string      // each exec's bundle, or "reason:<r>"
		asked   int
		wantDir string
	}{
		{name: "fixed", id: "c1", want: []string{"reason:state", "reason:state"}, wantDir: wrong},
		{name: "learned at the first miss", learn: []answer{{dir: right}}, id: "c1", want: []string{bundle, bundle}, asked: 1, wantDir: right},
		{name: "runtime still down, then up", learn: []answer{{err: errors.New("connection refused")}, {dir: right}}, id: "c1",
			step: relearnEvery, want: []string{"reason:state", bundle}, asked: 2, wantDir: right},
		{name: "asked at most every few seconds", learn: []answer{{err: errors.New("connection refused")}, {dir: right}}, id: "c1",
			step: time.Second, want: []string{"reason:state", "reason:state"}, asked: 1, wantDir: wrong},
		{name: "a removed container in the right directory", learn: []answer{{dir: right}}, id: "gone", want: []string{"reason:bundle", "reason:bundle"}, asked: 1, wantDir: right},
		{name: "CRI-O", learn: []answer{{err: fmt.Errorf("status: %w", runtimestate.ErrCRIO)}}, id: "c1",
			want: []string{"reason:runtime", "reason:runtime"}, asked: 1, wantDir: wrong},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
			s := &stateDir{dir: wrong, clock: clk, log: zap.NewNop()}
			asked := 0
			if tc.learn != nil {
				s.learn = func(context.Context) (string, error) {
					a := tc.learn[min(asked, len(tc.learn)-1)]
					asked++
					return a.dir, a.err
				}
			}
			for i, want := range tc.want {
				if i > 0 {
					clk.SetTime(clk.Now().Add(tc.step))
				}
				got, err := s.bundle(context.Background(), tc.id)
				var u *unsupported
				if errors.As(err, &u) {
					got = "reason:" + u.reason
				} else if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("exec %d: %s, want %s", i, got, want)
				}
			}
			if asked != tc.asked {
				t.Errorf("asked %d times, want %d", asked, tc.asked)
			}
			if s.dir != tc.wantDir {
				t.Errorf("dir %s, want %s", s.dir, tc.wantDir)
			}
		})
	}
}
