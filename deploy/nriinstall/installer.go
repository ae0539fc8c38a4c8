package nriinstall

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/containerd/nri/pkg/api"
)

// Default values: containerd's NRI defaults and probelet's plugin identity.
const (
	DefaultPluginDir = "/opt/nri/plugins"
	DefaultConfigDir = "/etc/nri/conf.d"
	DefaultIndex     = "10"
	DefaultName      = "probelet"
)

// Installer places one plugin executable and its configuration where NRI
// looks for pre-installed plugins.
type Installer struct {
	pluginDir  string
	configDir  string
	stagingDir string
	index      string
	name       string
}

// Option configures an Installer.
type Option func(*Installer) error

// WithIndex sets the two-digit plugin index, which orders plugins.
func WithIndex(index string) Option {
	return func(i *Installer) error {
		if err := api.CheckPluginIndex(index); err != nil {
			return err
		}
		i.index = index
		return nil
	}
}

// WithName sets the plugin name registered with NRI.
func WithName(name string) Option {
	return func(i *Installer) error {
		if err := api.CheckPluginName(name); err != nil {
			return err
		}
		i.name = name
		return nil
	}
}

// WithStagingDir sets where the executable is written before it is renamed
// into the plugin directory. It must be on the same filesystem and must not
// be the plugin directory. The default is the plugin directory's parent.
func WithStagingDir(dir string) Option {
	return func(i *Installer) error {
		if dir == "" {
			return errors.New("staging directory is empty")
		}
		i.stagingDir = dir
		return nil
	}
}

// New returns an Installer for NRI's plugin_path pluginDir and
// plugin_config_path configDir.
func New(pluginDir, configDir string, opts ...Option) (*Installer, error) {
	if pluginDir == "" || configDir == "" {
		return nil, errors.New("plugin and config directories must be set")
	}
	i := &Installer{
		pluginDir: filepath.Clean(pluginDir),
		configDir: filepath.Clean(configDir),
		index:     DefaultIndex,
		name:      DefaultName,
	}
	i.stagingDir = filepath.Dir(i.pluginDir)
	for _, o := range opts {
		if err := o(i); err != nil {
			return nil, err
		}
	}
	if filepath.Clean(i.stagingDir) == i.pluginDir {
		return nil, fmt.Errorf("staging directory %s must not be the plugin directory", i.stagingDir)
	}
	return i, nil
}

// PluginPath is where the executable goes: <plugin dir>/<idx>-<name>.
func (i *Installer) PluginPath() string {
	return filepath.Join(i.pluginDir, i.index+"-"+i.name)
}

// ConfigPath is the configuration NRI hands the plugin in Configure:
// <config dir>/<idx>-<name>.conf.
func (i *Installer) ConfigPath() string {
	return filepath.Join(i.configDir, i.index+"-"+i.name+".conf")
}
