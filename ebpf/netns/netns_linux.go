package netns

import (
	"fmt"
	"math"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// Inode returns the inode of the network namespace file at path (e.g.
// /proc/<pid>/ns/net or a bind mount under /run/netns); the kernel reports
// the same number as the namespace's ns.inum.
func Inode(path string) (uint32, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Ino > math.MaxUint32 {
		return 0, fmt.Errorf("netns %s: inode %d is not a namespace inode", path, st.Ino)
	}
	return uint32(st.Ino), nil
}

// Do runs fn on an OS thread that has joined the network namespace at path,
// and returns fn's error. Sockets fn creates stay in that namespace after
// it returns. The thread returns to the caller's namespace afterwards; if
// that fails, the thread is thrown away rather than reused.
func Do(path string, fn func() error) error {
	target, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("netns: %w", err)
	}
	defer target.Close()
	errc := make(chan error, 1)
	go func() { errc <- doLocked(int(target.Fd()), path, fn) }()
	return <-errc
}

// doLocked must run on its own goroutine: it leaves the thread locked (and
// so discarded when the goroutine ends) unless it restored the namespace.
func doLocked(target int, path string, fn func() error) error {
	runtime.LockOSThread()
	orig, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netns: %w", err)
	}
	defer orig.Close()
	if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netns: enter %s: %w", path, err)
	}
	ferr := fn()
	if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("netns: leave %s: %w", path, err)
	}
	runtime.UnlockOSThread()
	return ferr
}
