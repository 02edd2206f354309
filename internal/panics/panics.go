// Package panics carries a panic from a goroutine that dynashard started
// to the goroutine of the call that started it, where it is raised again,
// so that the caller's recover (or net/http's) sees it instead of the
// process dying. A goroutine defers Recover, or a Group's Recover, which
// turns a panic into an *Error in its result; the call waits for its
// goroutines and then raises the *Error a result carried (Raise), or the
// first one the Group kept (Group.Raise).
package panics

import (
	"fmt"
	"runtime/debug"
	"sync/atomic"
)

// Error is a panic recovered on a goroutine of the library: the value it
// panicked with and the stack where it did. It unwraps to the value when
// that is an error, so that errors.Is and errors.As on a recovered *Error
// find what the code panicked with.
type Error struct {
	Value any
	Stack []byte
}

func (e *Error) Error() string {
	return fmt.Sprintf("dynashard: panic on a goroutine of the call, raised again in the caller's: %v\n\n%s", e.Value, e.Stack)
}

func (e *Error) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// Recover, deferred by a goroutine's function, sets *err to an *Error if
// the function panics. A panic with an *Error (raised again from a
// goroutine further down) is kept as it is, with the stack where it
// happened. runtime.Goexit is not a panic and is not caught.
func Recover(err *error) {
	if v := recover(); v != nil {
		*err = wrap(v)
	}
}

func wrap(v any) *Error {
	if p, ok := v.(*Error); ok {
		return p
	}
	return &Error{Value: v, Stack: debug.Stack()}
}

// Raise panics with err, in the caller's goroutine, if it is an *Error
// (itself, not wrapped); it does nothing otherwise.
func Raise(err error) {
	if p, ok := err.(*Error); ok {
		panic(p)
	}
}

// Group keeps the first panic of one call's goroutines, whatever error
// the call's errgroup returns first. The zero value is ready to use; it is
// safe for concurrent use.
type Group struct {
	first atomic.Pointer[Error]
}

// Recover is Recover that also keeps the panic if it is the Group's
// first.
func (g *Group) Recover(err *error) {
	if v := recover(); v != nil {
		p := wrap(v)
		g.first.CompareAndSwap(nil, p)
		*err = p
	}
}

// Raise panics with the Group's first panic, if any, in the caller's
// goroutine. Call it once every goroutine has ended.
func (g *Group) Raise() {
	if p := g.first.Load(); p != nil {
		panic(p)
	}
}
