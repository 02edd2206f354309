// Package svctest runs an example service's real main logic inside a
// test: flags, table creation, listener and graceful shutdown included.
package svctest

import (
	"bytes"
	"context"
	"io"
	"sync"
	"testing"
)

// RunFunc is an example's run function: serve until ctx is done, calling
// ready with the listening address once requests are accepted.
type RunFunc func(ctx context.Context, args []string, logw io.Writer, ready func(addr string)) error

// Start runs run with args (which should listen on 127.0.0.1:0) and
// returns its base URL once it is ready. When t ends, it cancels run's
// context, as a signal would, and fails t unless run shuts down cleanly.
func Start(t testing.TB, run RunFunc, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	logs := &syncBuffer{}
	go func() { done <- run(ctx, args, logs, func(a string) { addr <- a }) }()
	select {
	case a := <-addr:
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("shutdown: %v\nlog:\n%s", err, logs)
			}
		})
		return "http://" + a
	case err := <-done:
		cancel()
		t.Fatalf("service did not start: %v\nlog:\n%s", err, logs)
		return ""
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
