package logging_test

import (
	"os"
	"strings"
	"testing"

	"github.com/probelet/probelet/internal/logging"
)

func TestNew(t *testing.T) {
	var buf strings.Builder
	l, err := logging.New(&buf, "json", "warn")
	if err != nil {
		t.Fatal(err)
	}
	l.Info("hidden")
	l.Warn("shown")
	if out := buf.String(); strings.Contains(out, "hidden") || !strings.Contains(out, `"msg":"shown"`) {
		t.Errorf("json logger wrote %q", out)
	}
	if _, err := logging.New(os.Stderr, "xml", "info"); err == nil {
		t.Error("bad format accepted")
	}
	if _, err := logging.New(os.Stderr, "console", "loud"); err == nil {
		t.Error("bad level accepted")
	}
}
