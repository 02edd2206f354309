package repo

import (
	"fmt"
	"runtime/debug"
)

// panicError carries a panic recovered on one of the Repo's goroutines (the
// cache's shared load, List's parallel reads) to the caller's goroutine,
// where it is raised again, so that the caller's recover, or net/http's,
// sees it rather than the process dying. It holds the value and the stack
// where the panic happened, and unwraps to the value when that is an error.
type panicError struct {
	value any
	stack []byte
}

func (p *panicError) Error() string {
	return fmt.Sprintf("repo: panic on a repository goroutine: %v\n\n%s", p.value, p.stack)
}

func (p *panicError) Unwrap() error {
	err, _ := p.value.(error)
	return err
}

// catch runs f on the current goroutine and returns a panic in f as a
// *panicError. (runtime.Goexit is not a panic and is not caught.)
func catch(f func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &panicError{value: v, stack: debug.Stack()}
		}
	}()
	return f()
}
