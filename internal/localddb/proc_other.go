//go:build !linux

package localddb

import "os/exec"

// BindToParent has no kernel help here; Server.Close and, for dynalite and
// s3rver, the closed stdin pipe stop the server.
func BindToParent(*exec.Cmd) {}
