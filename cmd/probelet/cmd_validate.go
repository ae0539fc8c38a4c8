package main

import (
	"io"

	"github.com/spf13/cobra"
)

// validateFunc is runValidate's shape: it parses its own flags, reports its
// own errors and returns the exit status.
type validateFunc func(args []string, stdin io.Reader, stdout, stderr io.Writer) int

// newValidateCommand hands `probelet validate ...` to validate.
func newValidateCommand(validate validateFunc, stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:                "validate [flags] [FILE|-]",
		Short:              "Check the probes of a Pod manifest or a probelet.io/probes annotation value",
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			if code := validate(args, stdin, stdout, stderr); code != 0 {
				return exitCode(code)
			}
			return nil
		},
	}
}
