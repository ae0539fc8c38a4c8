// Package cli is probectl: the troubleshooting CLI that reads probelet's
// socket. One file per command (noun); each command has an Options struct
// with Complete, Validate and Run, writes only to the injected streams and
// reads time from an injected clock, so commands are tested end to end
// against an in-process server.
package cli
