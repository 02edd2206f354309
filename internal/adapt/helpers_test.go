package adapt

import (
	"runtime"
	"testing"
	"time"
)

// waiting is the number of goroutines waiting in Acquire.
func (l *Limiter) waiting() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.waiters)
}

// waitFor yields until cond holds; the goroutines it waits for only need
// to be scheduled, so it fails only if they are stuck.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached: a goroutine is stuck")
		}
		runtime.Gosched()
	}
}
