// Command containerd-apparmor loads containerd's default AppArmor profile
// into the kernel exactly as containerd's CRI plugin does before it starts
// a container with the RuntimeDefault profile (contrib/apparmor's
// LoadDefaultProfile: its template, filled in from /etc/apparmor.d, then
// apparmor_parser -Kr), and prints the profile it loaded. The test VM
// (hack/vm) runs it so that directexec's AppArmor test confines a container
// with the profile nodes really use. It is its own module: containerd is
// not a dependency of probelet.
package main

import (
	"fmt"
	"os"

	"github.com/containerd/containerd/v2/contrib/apparmor"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: containerd-apparmor PROFILE-NAME")
		os.Exit(2)
	}
	name := os.Args[1]
	text, err := apparmor.DumpDefaultProfile(name)
	if err != nil {
		fmt.Fprintf(os.Stderr, "containerd-apparmor: %v\n", err)
		os.Exit(1)
	}
	if err := apparmor.LoadDefaultProfile(name); err != nil {
		fmt.Fprintf(os.Stderr, "containerd-apparmor: %v\n", err)
		os.Exit(1)
	}
	fmt.Print(text)
}
