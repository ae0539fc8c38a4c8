// Command probelet is the node agent that takes container health probing
// off the kubelet: it learns containers from containerd over NRI, probes
// them with the kubelet's semantics and serves the results on a socket.
package main

import (
	"errors"
	"fmt"
	"os"
)

func main() {
	if err := run(); err != nil {
		var code exitCode
		if !errors.As(err, &code) {
			fmt.Fprintln(os.Stderr, "probelet:", err)
			code = 1
		}
		os.Exit(int(code))
	}
}

// run executes the command line once.
func run() error {
	return newRootCommand(os.Stdin, os.Stdout, os.Stderr).Execute()
}

// exitCode is an error that only carries a process exit status; whoever
// returns it has already told the user why.
type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit status %d", int(c)) }
