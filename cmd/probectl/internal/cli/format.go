package cli

import (
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"
)

// Widths of truncated columns.
const (
	idWidth     = 13
	outputWidth = 50
)

// shortID is the 13-character ID crictl prints.
func shortID(id string, noTrunc bool) string {
	if noTrunc || len(id) <= idWidth {
		return id
	}
	return id[:idWidth]
}

// shortImage cuts a digest reference to 12 hex digits, as crictl does.
func shortImage(ref string, noTrunc bool) string {
	repo, digest, ok := strings.Cut(ref, "@sha256:")
	if noTrunc || !ok || len(digest) <= 12 {
		return ref
	}
	return repo + "@sha256:" + digest[:12]
}

// oneLine folds output onto one line and, unless noTrunc, cuts it.
func oneLine(s string, noTrunc bool) string {
	s = strings.Join(strings.Fields(s), " ")
	if noTrunc || len(s) <= outputWidth {
		return s
	}
	return s[:outputWidth-3] + "..."
}

// age is kubectl's short duration since t ("5m", "2d"), "-" if unknown.
func age(now time.Time, t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return duration.HumanDuration(now.Sub(*t))
}

// stamp is an absolute time with its age: "2026-05-01T11:59:57Z (3s ago)".
func stamp(now time.Time, t *time.Time) string {
	if t == nil || t.IsZero() {
		return "never"
	}
	return t.UTC().Format(time.RFC3339) + " (" + age(now, t) + " ago)"
}

// clockTime is the time of day, for tables of recent runs and events.
func clockTime(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.UTC().Format("15:04:05")
}

// stateWord is the table spelling of a container state: Running, Exited, ...
func stateWord(state string) string {
	s := strings.TrimPrefix(state, "CONTAINER_")
	if s == "" {
		return "Unknown"
	}
	return s[:1] + strings.ToLower(s[1:])
}

func yesNo(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
