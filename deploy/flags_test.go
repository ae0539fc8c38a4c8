package deploy_test

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
)

// daemonFlags are probelet's flags (DESIGN.md "Daemon flags", issue 3's
// --liveness-action, issue 4's --tcp-verify) with what a valid value is.
var daemonFlags = map[string]func(string) error{
	"--nri-socket":           absPath,
	"--runtime-endpoint":     unixURL,
	"--listen":               unixURL,
	"--metrics-bind-address": hostPort,
	"--tcp-mode":             oneOf("auto", "ebpf", "dial"),
	"--liveness-action":      oneOf("restart", "report"),
	"--tcp-verify":           oneOf("true", "false"),
	"--node-name":            oneOf("$(NODE_NAME)"), // the downward API's node name, nothing else
	"--kubeconfig":           absPath,
	"--state-dir":            absPath,
	"--kill-guard":           oneOf("on", "off"),
	"--state-listen":         hostPort,
}

// parseFlags reads "--name=value" arguments: every flag known, set once and
// valid. The "=" form keeps one flag per list item, which the components'
// JSON patches rely on.
func parseFlags(args []string) (map[string]string, error) {
	flags := map[string]string{}
	var errs []error
	for _, a := range args {
		name, value, ok := strings.Cut(a, "=")
		check, known := daemonFlags[name]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("argument %q: want --flag=value", a))
		case !known:
			errs = append(errs, fmt.Errorf("argument %q: probelet has no flag %s", a, name))
		case flags[name] != "":
			errs = append(errs, fmt.Errorf("flag %s set twice", name))
		default:
			if err := check(value); err != nil {
				errs = append(errs, fmt.Errorf("flag %s: %w", name, err))
			}
			flags[name] = value
		}
	}
	return flags, errors.Join(errs...)
}

func absPath(v string) error {
	if !path.IsAbs(v) || path.Clean(v) != v {
		return fmt.Errorf("%q is not a clean absolute path", v)
	}
	return nil
}

func unixURL(v string) error {
	u, err := url.Parse(v)
	if err != nil {
		return err
	}
	if u.Scheme != "unix" || u.Host != "" {
		return fmt.Errorf("%q is not unix:///absolute/path", v)
	}
	return absPath(u.Path)
}

// unixPath is the socket path of a unix:// URL checked by unixURL.
func unixPath(v string) string {
	return strings.TrimPrefix(v, "unix://")
}

func hostPort(v string) error {
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		return err
	}
	if host != "" && net.ParseIP(host) == nil {
		return fmt.Errorf("%q: bind to an IP address", v)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("%q: bad port", v)
	}
	return nil
}

func oneOf(values ...string) func(string) error {
	return func(v string) error {
		if !slices.Contains(values, v) {
			return fmt.Errorf("%q is not one of %q", v, values)
		}
		return nil
	}
}
