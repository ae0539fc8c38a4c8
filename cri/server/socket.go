package server

import (
	"fmt"

	"github.com/probelet/probelet/internal/endpoint"
)

// SocketPath returns the filesystem path of the listen endpoint
// (endpoint.UnixPath's rule).
func SocketPath(ep string) (string, error) {
	path, err := endpoint.UnixPath(ep)
	if err != nil {
		return "", fmt.Errorf("listen address %w", err)
	}
	return path, nil
}
