package nriinstall

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// pluginMode is what NRI needs to launch the plugin (any execute bit).
const (
	pluginMode = 0o755
	configMode = 0o644
)

// Result says what Install or Uninstall changed.
type Result struct {
	// PluginChanged is true when the executable was written or removed.
	PluginChanged bool
	// ConfigChanged is true when the configuration was written or removed.
	ConfigChanged bool
	// Problems lists files in the plugin directory that make NRI refuse to
	// start every pre-installed plugin, this one included.
	Problems []error
}

// Changed reports whether anything changed; containerd launches
// pre-installed plugins only when it starts, so a change takes effect at
// its next restart.
func (r Result) Changed() bool {
	return r.PluginChanged || r.ConfigChanged
}

// Install puts the executable at PluginPath and config at ConfigPath. A nil
// config removes an existing configuration file, so the result always
// matches the request. Files already holding the wanted content are left
// untouched. The executable is streamed, never held in memory: probelet is
// about 27 MB, and the installer DaemonSet runs under a small memory limit.
// Copies staged by an installer that was killed before renaming them are
// removed first.
func (i *Installer) Install(binary string, config []byte) (Result, error) {
	var res Result
	exe, err := os.Open(binary)
	if err != nil {
		return res, fmt.Errorf("read plugin executable: %w", err)
	}
	defer exe.Close()
	if err := os.MkdirAll(i.pluginDir, 0o755); err != nil {
		return res, fmt.Errorf("create plugin directory: %w", err)
	}
	for _, dir := range []string{i.stagingDir, i.configDir} {
		if err := removeStaged(dir); err != nil {
			return res, err
		}
	}
	if res.PluginChanged, err = i.putFile(exe); err != nil {
		return res, err
	}
	if res.ConfigChanged, err = i.putConfig(config); err != nil {
		return res, err
	}
	res.Problems, err = scanPluginDir(i.pluginDir)
	return res, err
}

// Uninstall removes the executable and the configuration. Missing files are
// not an error.
func (i *Installer) Uninstall() (Result, error) {
	var res Result
	var err error
	if res.PluginChanged, err = remove(i.PluginPath()); err != nil {
		return res, err
	}
	res.ConfigChanged, err = remove(i.ConfigPath())
	return res, err
}

func (i *Installer) putConfig(config []byte) (bool, error) {
	if config == nil {
		return remove(i.ConfigPath())
	}
	if err := os.MkdirAll(i.configDir, 0o755); err != nil {
		return false, fmt.Errorf("create config directory: %w", err)
	}
	// NRI reads only <idx>-<name>.conf and <name>.conf, so a dot-file in the
	// same directory is a safe staging place.
	return i.put(i.configDir, i.ConfigPath(), config, configMode)
}

// putFile copies the executable exe to PluginPath through the staging
// directory unless it is there already.
func (i *Installer) putFile(exe *os.File) (bool, error) {
	same, err := holdsFile(i.PluginPath(), exe, pluginMode)
	if err != nil || same {
		return false, err
	}
	if _, err := exe.Seek(0, io.SeekStart); err != nil {
		return false, fmt.Errorf("read plugin executable: %w", err)
	}
	if err := writeAtomic(i.stagingDir, i.PluginPath(), exe, pluginMode); err != nil {
		return false, err
	}
	return true, nil
}

// put writes content to dest through stagingDir unless dest already holds it.
func (i *Installer) put(stagingDir, dest string, content []byte, mode fs.FileMode) (bool, error) {
	same, err := holds(dest, content, mode)
	if err != nil || same {
		return false, err
	}
	if err := writeAtomic(stagingDir, dest, bytes.NewReader(content), mode); err != nil {
		return false, err
	}
	return true, nil
}

// holds reports whether path is a regular file with content and mode.
func holds(path string, content []byte, mode fs.FileMode) (bool, error) {
	info, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !info.Mode().IsRegular() || info.Mode().Perm() != mode || info.Size() != int64(len(content)) {
		return false, nil
	}
	have, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	return bytes.Equal(have, content), nil
}

// holdsFile reports whether path is a regular file with mode and the
// content of src, comparing in chunks.
func holdsFile(path string, src *os.File, mode fs.FileMode) (bool, error) {
	info, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	want, err := src.Stat()
	if err != nil {
		return false, err
	}
	if !info.Mode().IsRegular() || info.Mode().Perm() != mode || info.Size() != want.Size() {
		return false, nil
	}
	have, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer have.Close()
	return sameContent(have, src)
}

// sameContent compares two readers chunk by chunk.
func sameContent(a, b io.Reader) (bool, error) {
	const chunk = 64 << 10
	ba, bb := make([]byte, chunk), make([]byte, chunk)
	for {
		na, errA := io.ReadFull(a, ba)
		nb, errB := io.ReadFull(b, bb)
		if !bytes.Equal(ba[:na], bb[:nb]) {
			return false, nil
		}
		endA := errors.Is(errA, io.EOF) || errors.Is(errA, io.ErrUnexpectedEOF)
		endB := errors.Is(errB, io.EOF) || errors.Is(errB, io.ErrUnexpectedEOF)
		switch {
		case errA != nil && !endA:
			return false, errA
		case errB != nil && !endB:
			return false, errB
		case endA || endB:
			return endA && endB, nil
		}
	}
}

func remove(path string) (bool, error) {
	err := os.Remove(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, nil
}
