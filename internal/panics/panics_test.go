package panics

import (
	"errors"
	"sync"
	"testing"
)

var errBoom = errors.New("boom")

// recovered runs f and returns what it panicked with in this goroutine.
func recovered(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}

// run calls f with Recover deferred.
func run(f func() error) (err error) {
	defer Recover(&err)
	return f()
}

func TestRecover(t *testing.T) {
	if err := run(func() error { return errBoom }); err != errBoom {
		t.Errorf("an error: got %v, want it returned as it is", err)
	}
	err := run(func() error { panic(errBoom) })
	p, ok := err.(*Error)
	if !ok || p.Value != errBoom || len(p.Stack) == 0 || !errors.Is(err, errBoom) {
		t.Fatalf("a panic: got %#v, want an *Error holding the value and a stack, matching it", err)
	}
	if again := run(func() error { panic(p) }); again != p {
		t.Errorf("a panic with an *Error: got %v, want the same *Error", again)
	}
	if err := run(func() error { panic("text") }); errors.Unwrap(err) != nil || err.(*Error).Value != "text" {
		t.Errorf("a panic with a string: got %v, want an *Error unwrapping to nil", err)
	}
}

func TestRaise(t *testing.T) {
	if v := recovered(func() { Raise(errBoom) }); v != nil {
		t.Errorf("Raise of an error: panicked %v", v)
	}
	if v := recovered(func() { Raise(nil) }); v != nil {
		t.Errorf("Raise(nil): panicked %v", v)
	}
	p := &Error{Value: errBoom}
	if v := recovered(func() { Raise(p) }); v != p {
		t.Errorf("Raise of an *Error: recovered %v, want it", v)
	}
}

// TestGroup: the first panic of several goroutines is raised, whatever
// the others returned.
func TestGroup(t *testing.T) {
	var g Group
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = func() (err error) {
				defer g.Recover(&err)
				if i%2 == 0 {
					return errors.New("plain")
				}
				panic(errBoom)
			}()
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if _, ok := err.(*Error); ok != (i%2 == 1) {
			t.Errorf("goroutine %d returned %v", i, err)
		}
	}
	v := recovered(g.Raise)
	if e, ok := v.(*Error); !ok || !errors.Is(e, errBoom) {
		t.Errorf("recovered %v, want an *Error matching errBoom", v)
	}
	var none Group
	if v := recovered(none.Raise); v != nil {
		t.Errorf("no panic: Raise panicked %v", v)
	}
}
