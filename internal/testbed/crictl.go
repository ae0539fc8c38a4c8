package testbed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

const crictlTimeout = 2 * time.Minute

// Crictl runs crictl against this bed's containerd and returns its stdout.
// A failure's error carries crictl's stderr and wraps its *exec.ExitError.
func (b *Bed) Crictl(args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), crictlTimeout)
	defer cancel()
	full := append([]string{"--config", filepath.Join(b.Dir(), "crictl.yaml"),
		"--runtime-endpoint", b.CRIEndpoint(), "--image-endpoint", b.CRIEndpoint()}, args...)
	cmd := exec.CommandContext(ctx, b.crictl, full...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("crictl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// crictlID runs crictl and returns the single ID it prints.
func (b *Bed) crictlID(args ...string) (string, error) {
	out, err := b.Crictl(args...)
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(string(out))
	if id == "" || strings.ContainsAny(id, " \n") {
		return "", fmt.Errorf("crictl %s printed %q, want one ID", strings.Join(args, " "), out)
	}
	return id, nil
}

// execExit matches how the CRI client reports a non-zero ExecSync exit:
// "command 'CMD' exited with N: STDERR".
var execExit = regexp.MustCompile(`command '.*' exited with (-?\d+):`)

// Exec runs cmd in the container through CRI ExecSync (crictl exec -s) and
// returns what crictl prints and the exit code. On exit 0 crictl prints the
// command's stdout, a newline, its stderr and a newline; on a non-zero exit
// it prints nothing (the stderr is only in its error text), and Exec returns
// the code with a nil error. err reports ExecSync itself failing.
func (b *Bed) Exec(containerID string, cmd ...string) (output []byte, exitCode int, err error) {
	out, err := b.Crictl(append([]string{"exec", "-s", containerID}, cmd...)...)
	if err == nil {
		return out, 0, nil
	}
	if m := execExit.FindStringSubmatch(err.Error()); m != nil && errors.As(err, new(*exec.ExitError)) {
		code, convErr := strconv.Atoi(m[1])
		if convErr == nil {
			return out, code, nil
		}
	}
	return out, 0, err
}
