package dynashardtest

import (
	"context"
	"fmt"
	"os/exec"
	"runtime"
	"sync"
	"time"

	"github.com/dynashard/dynashard/internal/localddb"
)

// startTimeout bounds a start, including a first install: DynamoDB Local
// is a download of about 57 MB.
const startTimeout = 10 * time.Minute

// shared is one running server and the handles open on it.
type shared struct {
	ready chan struct{}    // closed when the start has succeeded or failed
	srv   *localddb.Server // set before ready is closed; nil on failure
	err   error            // set before ready is closed
	refs  int              // open handles; guarded by mu

	stop     chan struct{} // closed by the last release
	stopped  chan struct{} // closed once srv has exited
	closeErr error         // set before stopped is closed
}

var (
	mu      sync.Mutex
	running = map[Kind]*shared{} // at most one server per Kind
)

// acquire returns the running server of kind, starting it if there is
// none, and counts one more handle on it.
func acquire(kind Kind) (*shared, error) {
	mu.Lock()
	sh := running[kind]
	if sh == nil {
		sh = &shared{ready: make(chan struct{}), stop: make(chan struct{}), stopped: make(chan struct{})}
		running[kind] = sh
		go sh.run(kind)
	}
	sh.refs++
	mu.Unlock()
	<-sh.ready
	if sh.err != nil {
		return nil, sh.err
	}
	return sh, nil
}

// release counts one handle less and, for the last one, stops the server
// and waits for it to exit.
func release(kind Kind, sh *shared) error {
	mu.Lock()
	sh.refs--
	last := sh.refs == 0
	if last && running[kind] == sh {
		delete(running, kind) // the next acquire starts a fresh server
	}
	mu.Unlock()
	if !last {
		return nil
	}
	close(sh.stop)
	<-sh.stopped
	return sh.closeErr
}

// run starts the server and stops it after the last release, all on one
// goroutine locked to its OS thread. On Linux localddb asks the kernel to
// kill the server when the thread that started it exits (Pdeathsig, which
// is per thread, not per process). Were the server started on whatever
// thread the caller ran on, a goroutine that later locked that thread and
// returned without unlocking would end the thread and kill the server under
// every other handle. This thread runs nothing else and lives until the
// server has exited.
func (sh *shared) run(kind Kind) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	sh.srv, sh.err = start(kind)
	if sh.err != nil {
		mu.Lock()
		if running[kind] == sh {
			delete(running, kind) // the next acquire tries again
		}
		mu.Unlock()
		close(sh.ready)
		return
	}
	close(sh.ready)
	<-sh.stop
	if err := sh.srv.Close(); err != nil {
		sh.closeErr = fmt.Errorf("dynashardtest: stop %s: %w", kind, err)
	}
	close(sh.stopped)
}

func start(kind Kind) (*localddb.Server, error) {
	if err := needRuntime(kind); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	srv, err := localddb.Start(ctx, localKinds[kind])
	if err != nil {
		return nil, fmt.Errorf("dynashardtest: start %s: %w", kind, err)
	}
	return srv, nil
}

// missingToolError reports a runtime a server needs that is not on PATH.
type missingToolError struct {
	tool    string // the command looked for
	server  string // the server that needs it
	install string // what to install
}

func (e *missingToolError) Error() string {
	return fmt.Sprintf("dynashardtest: %s needs %s, which is not on PATH: install %s", e.server, e.tool, e.install)
}

var runtimes = map[Kind]missingToolError{
	DynamoDBLocal: {"java", "DynamoDB Local", "a Java runtime, version 17 or later (e.g. Debian's openjdk-17-jre-headless), or use Kind Dynalite"},
	Dynalite:      {"node", "dynalite", "Node.js 20 or later (with npm for the first download), or use Kind DynamoDBLocal"},
}

// needRuntime checks for the server's runtime before anything is
// downloaded: a missing java should not cost a 57 MB download first.
func needRuntime(kind Kind) error {
	e := runtimes[kind]
	if _, err := exec.LookPath(e.tool); err != nil {
		return &e
	}
	return nil
}
