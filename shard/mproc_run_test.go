package shard_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The multi-process checker's children as processes: started (the test
// binary run again, with its mprocChild in mprocEnv), restarted after a
// kill, paused and killed. Only processes this runner started, and not
// yet reaped, are signalled, by their pid.

// mprocProc is one child process.
type mprocProc struct {
	slot   *mprocSlot
	name   string
	out    string
	cmd    *exec.Cmd
	end    int64 // unix nanoseconds, once it exited
	killed bool
	paused bool
	exited bool
	err    error
}

// mprocRunner starts the children, restarts the killed ones, and pauses
// and kills them until the run ends.
type mprocRunner struct {
	t     *testing.T
	scene mprocScene
	dir   string
	relay string
	table string
	start time.Time
	until time.Time

	mu      sync.Mutex
	rng     *rand.Rand
	wg      sync.WaitGroup
	procs   []*mprocProc
	next    int
	actions []string // what the chaos did, for the report
}

func (r *mprocRunner) log(format string, args ...any) {
	r.actions = append(r.actions, fmt.Sprintf("%6.1fs ", time.Since(r.start).Seconds())+fmt.Sprintf(format, args...))
}

func (r *mprocRunner) run() {
	r.mu.Lock()
	for i := range r.scene.slots {
		r.launch(&r.scene.slots[i])
	}
	r.mu.Unlock()
	if r.scene.chaos {
		r.chaos()
	}
	// The children stop by themselves at until; a pause still running
	// ends on time; a child stuck a minute longer is killed.
	stuck := time.AfterFunc(time.Until(r.until)+time.Minute, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, p := range r.procs {
			if !p.exited {
				r.log("%s still running: killed", p.name)
				r.kill(p)
			}
		}
	})
	r.wg.Wait()
	stuck.Stop()
}

// launch starts an instance of slot; r.mu is held.
func (r *mprocRunner) launch(slot *mprocSlot) {
	r.next++
	p := &mprocProc{slot: slot, name: fmt.Sprintf("%s#%d", slot.name, r.next)}
	p.out = filepath.Join(r.dir, p.name+".jsonl")
	cfg := slot.cfg
	cfg.Name, cfg.Index, cfg.Endpoint, cfg.Table = p.name, r.next, r.relay, r.table
	cfg.Bases, cfg.IDs, cfg.Until, cfg.Out = r.scene.bases, r.scene.ids, r.until, p.out
	cfg.Proxy.Seed = int64(r.next)
	env, err := json.Marshal(cfg)
	if err != nil {
		r.t.Error(err)
		return
	}
	p.cmd = exec.Command(os.Args[0], "-test.run=^TestMultiProcess$", "-test.timeout=0")
	p.cmd.Env = append(os.Environ(), mprocEnv+"="+string(env))
	stderr, err := os.Create(filepath.Join(r.dir, p.name+".stderr"))
	if err != nil {
		r.t.Error(err)
		return
	}
	p.cmd.Stderr = stderr
	stdout, err := p.cmd.StdoutPipe()
	if err == nil {
		err = p.cmd.Start()
	}
	if err != nil {
		r.t.Errorf("start %s: %v", p.name, err)
		stderr.Close()
		return
	}
	r.procs = append(r.procs, p)
	r.wg.Go(func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if ev, ok := strings.CutPrefix(sc.Text(), "MPROC "+p.name+" "); ok {
				r.event(p, ev)
			}
		}
		err := p.cmd.Wait()
		stderr.Close()
		r.mu.Lock()
		defer r.mu.Unlock()
		p.exited, p.end, p.err = true, time.Now().UnixNano(), err
		if p.killed && time.Until(r.until) > 2*time.Second {
			r.launch(p.slot)
		}
	})
}

// event is a child's report of where it is: a Rebalance's progress is a
// point to pause or kill it at.
func (r *mprocRunner) event(p *mprocProc, ev string) {
	if !strings.HasPrefix(ev, "rebalance-progress") {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Now().After(r.until) || p.paused {
		return
	}
	switch x := r.rng.Float64(); {
	case x < p.slot.midPause:
		r.pause(p, 2*time.Second+time.Duration(r.rng.Int64N(int64(6*time.Second))), "mid-Rebalance ("+ev+")")
	case x < p.slot.midPause+p.slot.midKill:
		r.log("kill %s mid-Rebalance (%s)", p.name, ev)
		r.kill(p)
	}
}

// chaos pauses and kills random chaos children every 0.5–3 s.
func (r *mprocRunner) chaos() {
	for {
		r.mu.Lock()
		wait := 500*time.Millisecond + time.Duration(r.rng.Int64N(int64(2500*time.Millisecond)))
		r.mu.Unlock()
		if time.Until(r.until) < wait {
			return
		}
		time.Sleep(wait)
		r.mu.Lock()
		var live []*mprocProc
		for _, p := range r.procs {
			if !p.exited && !p.paused && p.slot.chaos {
				live = append(live, p)
			}
		}
		if len(live) > 0 {
			p := live[r.rng.IntN(len(live))]
			x := r.rng.Float64()
			if r.scene.noPause {
				x = 1
			}
			switch {
			case x < 0.55:
				r.pause(p, time.Duration(r.rng.Int64N(int64(2*time.Second))), "at random")
			case x < 0.75:
				r.pause(p, 2*time.Second+time.Duration(r.rng.Int64N(int64(6*time.Second))), "at random, beyond the fence")
			default:
				r.log("kill %s at random", p.name)
				r.kill(p)
			}
		}
		r.mu.Unlock()
	}
}

// pause stops p for d; r.mu is held. Only a process that has not been
// reaped is signalled, so its pid is still its own.
func (r *mprocRunner) pause(p *mprocProc, d time.Duration, why string) {
	if p.exited || p.paused {
		return
	}
	if err := syscall.Kill(p.cmd.Process.Pid, syscall.SIGSTOP); err != nil {
		return
	}
	p.paused = true
	r.log("pause %s for %v %s", p.name, d.Round(time.Millisecond), why)
	time.AfterFunc(d, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if !p.exited {
			syscall.Kill(p.cmd.Process.Pid, syscall.SIGCONT)
		}
		p.paused = false
	})
}

// kill kills p; r.mu is held.
func (r *mprocRunner) kill(p *mprocProc) {
	if p.exited || p.killed {
		return
	}
	p.killed = true
	syscall.Kill(p.cmd.Process.Pid, syscall.SIGKILL)
}
