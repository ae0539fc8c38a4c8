// Package procstat reads a process's /proc/<pid>/stat: the few fields
// probelet's kill check and direct exec need.
package procstat

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
)

// FlagExiting is the kernel's PF_EXITING task flag (include/linux/sched.h),
// set as a task begins to exit.
const FlagExiting = 0x4

// Stat is what probelet reads of /proc/<pid>/stat.
type Stat struct {
	State     byte   // field 3: R, S, D, Z, X, ...
	PPid      int    // field 4
	Flags     uint64 // field 9: the kernel's PF_* task flags
	StartTime uint64 // field 22: clock ticks since boot
}

// Read reads /proc/<pid>/stat under procRoot (the host's /proc, or a test's).
func Read(procRoot string, pid int) (Stat, error) {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "stat"))
	if err != nil {
		return Stat{}, err
	}
	return Parse(b)
}

// Parse parses a stat line: "pid (comm) S ppid pgrp session tty_nr tpgid
// flags ... starttime ...", where comm may hold spaces and parentheses.
func Parse(b []byte) (Stat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Stat{}, errors.New("malformed stat")
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 || len(f[0]) != 1 {
		return Stat{}, errors.New("malformed stat")
	}
	st := Stat{State: f[0][0]}
	var err error
	if st.PPid, err = strconv.Atoi(string(f[1])); err != nil {
		return Stat{}, err
	}
	if st.Flags, err = strconv.ParseUint(string(f[6]), 10, 64); err != nil {
		return Stat{}, err
	}
	st.StartTime, err = strconv.ParseUint(string(f[19]), 10, 64)
	return st, err
}
