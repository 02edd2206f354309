package main

import (
	"bytes"
	"strings"
	"testing"
)

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestHelp(t *testing.T) {
	code, out, errOut := runCLI(t, "-h")
	if code != 0 || out != "" || !strings.Contains(errOut, "usage: dynashard-bench") {
		t.Errorf("-h: exit %d, stdout %q, stderr %q; want 0, nothing, the usage", code, out, errOut)
	}
}
