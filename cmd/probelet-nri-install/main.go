// Command probelet-nri-install installs probelet as a pre-installed NRI
// plugin, on a host or from the installer DaemonSet in
// deploy/overlays/preinstalled. containerd and CRI-O (--runtime crio) both
// launch pre-installed plugins from /opt/nri/plugins, only when they start:
// restart the runtime after an install.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/probelet/probelet/deploy/nriinstall"
)

// options are the command line.
type options struct {
	binary, config       string
	pluginDir, configDir string
	stagingDir           string
	index, name          string
	runtime              string
	uninstall, wait      bool
}

// restartHint is what to restart after a change, per --runtime.
var restartHint = map[string]string{
	"containerd": "containerd launches pre-installed NRI plugins when it starts: restart containerd on this node to apply",
	"crio":       "CRI-O launches pre-installed NRI plugins when it starts: restart crio on this node to apply",
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "probelet-nri-install:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	o, err := parse(args)
	if err != nil {
		return err
	}
	inst, err := newInstaller(o)
	if err != nil {
		return err
	}
	if err := apply(o, inst, out); err != nil {
		return err
	}
	if o.wait {
		waitForSignal(out)
	}
	return nil
}

func parse(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("probelet-nri-install", flag.ContinueOnError)
	fs.StringVar(&o.binary, "binary", "/usr/local/bin/probelet", "probelet executable to install")
	fs.StringVar(&o.config, "config", "", "file whose content becomes the plugin configuration (empty: none)")
	fs.StringVar(&o.runtime, "runtime", "containerd", "the node's runtime: containerd or crio (what the output says to restart)")
	fs.StringVar(&o.pluginDir, "plugin-dir", nriinstall.DefaultPluginDir, "the runtime's NRI plugin directory (containerd's plugin_path, CRI-O's nri_plugin_dir)")
	fs.StringVar(&o.configDir, "config-dir", nriinstall.DefaultConfigDir, "the runtime's NRI plugin configuration directory (containerd's plugin_config_path, CRI-O's nri_plugin_config_dir)")
	fs.StringVar(&o.stagingDir, "staging-dir", "", "same-filesystem directory for the temporary copy (default: parent of --plugin-dir)")
	fs.StringVar(&o.index, "index", nriinstall.DefaultIndex, "two-digit plugin index")
	fs.StringVar(&o.name, "name", nriinstall.DefaultName, "plugin name")
	fs.BoolVar(&o.uninstall, "uninstall", false, "remove the plugin and its configuration instead")
	fs.BoolVar(&o.wait, "wait", false, "after installing, wait for SIGTERM (keeps a DaemonSet pod running)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if _, ok := restartHint[o.runtime]; !ok {
		return o, fmt.Errorf("--runtime %q: want containerd or crio", o.runtime)
	}
	return o, nil
}

func newInstaller(o options) (*nriinstall.Installer, error) {
	opts := []nriinstall.Option{nriinstall.WithIndex(o.index), nriinstall.WithName(o.name)}
	if o.stagingDir != "" {
		opts = append(opts, nriinstall.WithStagingDir(o.stagingDir))
	}
	return nriinstall.New(o.pluginDir, o.configDir, opts...)
}

func apply(o options, inst *nriinstall.Installer, out io.Writer) error {
	if o.uninstall {
		res, err := inst.Uninstall()
		report(out, inst, res, "removed", o.runtime)
		return err
	}
	config, err := readConfig(o.config)
	if err != nil {
		return err
	}
	res, err := inst.Install(o.binary, config)
	report(out, inst, res, "installed", o.runtime)
	if err != nil {
		return err
	}
	return errors.Join(res.Problems...)
}

// readConfig returns nil (no configuration) for an empty path.
func readConfig(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read plugin configuration: %w", err)
	}
	if b == nil {
		b = []byte{}
	}
	return b, nil
}

func report(out io.Writer, inst *nriinstall.Installer, res nriinstall.Result, verb, runtime string) {
	line := func(changed bool, path string) {
		if changed {
			fmt.Fprintf(out, "%s %s\n", verb, path)
		} else {
			fmt.Fprintf(out, "unchanged %s\n", path)
		}
	}
	line(res.PluginChanged, inst.PluginPath())
	line(res.ConfigChanged, inst.ConfigPath())
	if res.Changed() {
		fmt.Fprintln(out, restartHint[runtime])
	}
}

func waitForSignal(out io.Writer) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	fmt.Fprintln(out, "waiting for SIGTERM")
	<-ctx.Done()
}
