package main

import (
	"io"

	"github.com/spf13/cobra"
)

// newConvertCommand hands `probelet convert ...` to runConvert, which parses
// its own flags like validate does.
func newConvertCommand(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:                "convert [--diff|--write] [FILE|DIR|-]...",
		Short:              "Move the pod spec's probes of manifests into the probelet.io/probes annotation",
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			if code := runConvert(args, stdin, stdout, stderr); code != 0 {
				return exitCode(code)
			}
			return nil
		},
	}
}
