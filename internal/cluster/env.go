package cluster

import (
	"bufio"
	"bytes"
	"os"
	"strings"
	"time"
)

const (
	defaultCache        = "/var/cache/probelet-testbed"
	defaultStartTimeout = 25 * time.Minute
	downTimeout         = 2 * time.Minute
	// maxBaseLen keeps directories short: the kubelet's unix sockets live
	// under its directory, and kubelet.sh refuses directories over 60 bytes.
	maxBaseLen = 40
)

// scriptEnv is where the scripts and the cache are, shared by a Cluster and
// the kubelets started from it.
type scriptEnv struct {
	scripts      string
	cacheDir     string
	startTimeout time.Duration
}

// defaultEnv reads PROBELET_TESTBED_CACHE; the scripts dir is found later,
// after options had the chance to set it.
func defaultEnv() scriptEnv {
	e := scriptEnv{cacheDir: defaultCache, startTimeout: defaultStartTimeout}
	if c := os.Getenv("PROBELET_TESTBED_CACHE"); c != "" {
		e.cacheDir = c
	}
	return e
}

// resolve fills the scripts dir when no option set it.
func (e *scriptEnv) resolve() error {
	if e.scripts != "" {
		return nil
	}
	dir, err := findScripts()
	if err != nil {
		return err
	}
	e.scripts = dir
	return nil
}

// shortTempBase is os.TempDir unless that is too long for socket paths.
func shortTempBase() string {
	if d := os.TempDir(); len(d) <= maxBaseLen {
		return d
	}
	return "/tmp"
}

// parseEnv parses the KEY=VALUE lines of the scripts' env files and of
// build.sh's output.
func parseEnv(data []byte) map[string]string {
	kv := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			kv[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return kv
}

// readEnvFile parses an env file the scripts wrote.
func readEnvFile(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseEnv(data), nil
}

// keepOnFailure reports whether a failed test's directories stay for
// inspection (the test bed's switch, so one setting keeps everything).
func keepOnFailure() bool { return os.Getenv("PROBELET_TESTBED_KEEP") == "1" }
