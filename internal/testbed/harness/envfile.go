package harness

import (
	"bufio"
	"bytes"
	"os"
	"strings"
)

// ParseEnv parses KEY=VALUE lines: the env files the scripts write and
// build.sh's NAME=PATH output. Other lines are ignored; spaces around keys
// and values are trimmed.
func ParseEnv(data []byte) map[string]string {
	kv := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			kv[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return kv
}

// ReadEnvFile parses an env file the scripts wrote.
func ReadEnvFile(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseEnv(data), nil
}
