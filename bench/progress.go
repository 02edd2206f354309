package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// progress shows on stderr what the bench is doing. On a terminal one line
// is redrawn four times a second, with live counters; otherwise (a file, a
// pipe, a test) each status is printed once on its own line.
type progress struct {
	w   io.Writer
	tty bool

	mu        sync.Mutex
	scen      string
	scenStart time.Time
	stat      string
	live      func() string
	drawn     int // width of the line on screen

	stop chan struct{}
	wg   sync.WaitGroup
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w, stop: make(chan struct{})}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	if p.tty {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			t := time.NewTicker(250 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-p.stop:
					return
				case <-t.C:
					p.mu.Lock()
					p.redraw()
					p.mu.Unlock()
				}
			}
		}()
	}
	return p
}

// scenario starts a scenario.
func (p *progress) scenario(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.scen, p.stat, p.live, p.scenStart = name, "", nil, time.Now()
	if p.tty {
		p.redraw()
		return
	}
	fmt.Fprintln(p.w, name)
}

// status says what the current scenario is doing.
func (p *progress) status(s string) { p.statusLive(s, nil) }

// statusLive is status with counters that live() renders on each redraw.
func (p *progress) statusLive(s string, live func() string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stat, p.live = s, live
	if p.tty {
		p.redraw()
		return
	}
	fmt.Fprintln(p.w, "  "+s)
}

// redraw rewrites the line; the caller holds p.mu.
func (p *progress) redraw() {
	if p.scen == "" {
		return
	}
	line := fmt.Sprintf("%s (%s)", p.scen, time.Since(p.scenStart).Truncate(time.Second))
	if p.stat != "" {
		line += ": " + p.stat
	}
	if p.live != nil {
		line += " " + p.live()
	}
	pad := ""
	n := utf8.RuneCountInString(line)
	if n < p.drawn {
		pad = strings.Repeat(" ", p.drawn-n)
	}
	fmt.Fprint(p.w, "\r"+line+pad)
	p.drawn = n
}

// done stops the display and leaves the cursor on a fresh line.
func (p *progress) done() {
	select {
	case <-p.stop:
		return
	default:
	}
	close(p.stop)
	p.wg.Wait()
	if p.tty && p.drawn > 0 {
		fmt.Fprint(p.w, "\r"+strings.Repeat(" ", p.drawn)+"\r")
	}
}
