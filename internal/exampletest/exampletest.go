// Package exampletest is the TestMain of a package whose go doc Examples
// start servers through the public kit (dynashardtest) while its tests use
// internal/ddbtest. It lives apart from ddbtest so that ddbtest does not
// import dynashardtest: the proxy's own tests (dynashardtest/faultproxy,
// which dynashardtest imports) use ddbtest.
package exampletest

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/dynashard/dynashard/dynashardtest"
	"github.com/dynashard/dynashard/internal/ddbtest"
)

// Main is ddbtest.Main that, when Examples may run, holds one dynashardtest
// handle for the whole run (Hold), so that the Examples, each opening and
// closing its own, share one server instead of starting a JVM each. Use it
// as func TestMain(m *testing.M) { exampletest.Main(m) }.
func Main(m *testing.M) {
	release := Hold()
	code := m.Run()
	release()
	ddbtest.Stop()
	os.Exit(code)
}

// Hold opens a dynashardtest handle when Examples may run (no -test.run,
// or one that names an Example), and returns the function that closes it.
// A TestMain of its own calls it before m.Run and the function after.
func Hold() (release func()) {
	if !flag.Parsed() {
		flag.Parse()
	}
	if run := flag.Lookup("test.run").Value.String(); run == "" || strings.Contains(run, "Example") {
		if srv, err := dynashardtest.NewServer(); err == nil {
			return func() { srv.Close() }
		} // else each Example reports the failure itself
	}
	return func() {}
}
