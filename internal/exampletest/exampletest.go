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
// handle for the whole run, so that the Examples, each opening and closing
// its own, share one server instead of starting a JVM each. Use it as
// func TestMain(m *testing.M) { exampletest.Main(m) }.
func Main(m *testing.M) {
	flag.Parse()
	var examples *dynashardtest.Server
	if run := flag.Lookup("test.run").Value.String(); run == "" || strings.Contains(run, "Example") {
		if srv, err := dynashardtest.NewServer(); err == nil {
			examples = srv
		} // else each Example reports the failure itself
	}
	code := m.Run()
	if examples != nil {
		examples.Close()
	}
	ddbtest.Stop()
	os.Exit(code)
}
