package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dynashard/dynashard/internal/localddb"
)

// machine describes where the figures came from.
type machine struct {
	cores   int
	cpu     string // model name from /proc/cpuinfo, "" if unreadable
	goVer   string
	os      string
	memGiB  float64 // MemTotal, 0 if unreadable
	hostCPU string  // cores per /proc/cpuinfo, when it differs from NumCPU
}

func readMachine() machine {
	m := machine{cores: runtime.NumCPU(), goVer: runtime.Version(), os: runtime.GOOS + "/" + runtime.GOARCH}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		procs := 0
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if !ok {
				continue
			}
			switch strings.TrimSpace(k) {
			case "model name":
				if m.cpu == "" {
					m.cpu = strings.TrimSpace(v)
				}
			case "processor":
				procs++
			}
		}
		if procs > 0 && procs != m.cores {
			m.hostCPU = strconv.Itoa(procs)
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				kb, _ := strconv.ParseFloat(f[1], 64)
				m.memGiB = kb / (1 << 20)
			}
		}
	}
	return m
}

func (m machine) String() string {
	s := fmt.Sprintf("%d cores (runtime.NumCPU)", m.cores)
	if m.hostCPU != "" {
		s += fmt.Sprintf(" of %s listed in /proc/cpuinfo", m.hostCPU)
	}
	if m.cpu != "" {
		s += ", " + m.cpu
	}
	if m.memGiB > 0 {
		s += fmt.Sprintf(", %.1f GiB RAM", m.memGiB)
	}
	return s + ", " + m.goVer + " " + m.os
}

// serverDescription names the server and, for a local one, its runtime.
func serverDescription(kind localddb.Kind, endpoint string) string {
	switch kind {
	case localddb.DynamoDBLocal:
		return "DynamoDB Local 1.25.1, in memory" + toolVersion("java", "-version")
	case localddb.Dynalite:
		return "dynalite 4.0.0, in memory, restarted before every scenario" + toolVersion("node", "--version")
	default:
		return "external endpoint " + endpoint
	}
}

// toolVersion returns ", <first line of the tool's version output>" or "".
func toolVersion(tool string, arg string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, tool, arg).CombinedOutput()
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return " (" + tool + " " + strings.TrimSpace(strings.TrimPrefix(line, tool)) + ")"
}

// cpuSample is a point in time of the CPU time spent by this process (the
// client, and the proxy, which runs in it: cpuSplit divides them), by the
// local server (this process's descendants), and by the whole machine.
type cpuSample struct {
	at          time.Time
	self        time.Duration
	server      time.Duration
	serverKnown bool
	busy, total uint64 // /proc/stat jiffies
	machineOK   bool
}

// clockTick is USER_HZ, the unit of /proc's CPU times; 100 on every Linux
// this runs on.
const clockTick = 100

func sampleCPU() cpuSample {
	s := cpuSample{at: time.Now()}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	s.server, s.serverKnown = descendantsCPU(os.Getpid())
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		f := strings.Fields(line)
		if len(f) >= 5 && f[0] == "cpu" {
			var vals []uint64
			for _, x := range f[1:] {
				v, _ := strconv.ParseUint(x, 10, 64)
				vals = append(vals, v)
			}
			for i, v := range vals {
				if i < 8 { // user nice system idle iowait irq softirq steal
					s.total += v
					if i != 3 && i != 4 {
						s.busy += v
					}
				}
			}
			s.machineOK = true
		}
	}
	return s
}

// descendantsCPU sums utime+stime of every descendant of pid, read from
// /proc; the local server (java or node) is a child of this process.
func descendantsCPU(pid int) (time.Duration, bool) {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	if len(stats) == 0 {
		return 0, false
	}
	type proc struct {
		ppid  int
		ticks uint64
	}
	procs := map[int]proc{}
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		// The command name is in parentheses and may hold spaces.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 13 {
			continue
		}
		p, _ := strconv.Atoi(filepath.Base(filepath.Dir(path)))
		ppid, _ := strconv.Atoi(f[1])
		ut, _ := strconv.ParseUint(f[11], 10, 64)
		st, _ := strconv.ParseUint(f[12], 10, 64)
		procs[p] = proc{ppid, ut + st}
	}
	children := map[int][]int{}
	for p, pr := range procs {
		children[pr.ppid] = append(children[pr.ppid], p)
	}
	var ticks uint64
	found := false
	stack := append([]int(nil), children[pid]...)
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		ticks += procs[p].ticks
		found = true
		stack = append(stack, children[p]...)
	}
	return time.Duration(ticks) * time.Second / clockTick, found
}

// cpuUse is the CPU used between two samples, in cores (1.0 = one core
// busy the whole time).
type cpuUse struct {
	// client is the whole process (bench, library, SDK and the proxy)
	// unless split, when it is the client's own share (cpuSplit).
	client, server float64
	serverKnown    bool
	machine        float64 // fraction of all cores busy, every process counted
	machineKnown   bool

	split          bool    // proxy and runtime are known, client is its own share
	proxy, runtime float64 // the proxy's and the Go runtime's shares of the process
}

// splitBetween is cpuBetween with the process's CPU divided by s (the
// window's profile); without a known split, client stays the process.
func splitBetween(a, b cpuSample, s cpuSplit) cpuUse {
	u := cpuBetween(a, b)
	wall := b.at.Sub(a.at).Seconds()
	if !s.known || wall <= 0 {
		return u
	}
	u.split = true
	u.client, u.proxy, u.runtime = s.client.Seconds()/wall, s.proxy.Seconds()/wall, s.runtime.Seconds()/wall
	return u
}

func cpuBetween(a, b cpuSample) cpuUse {
	wall := b.at.Sub(a.at).Seconds()
	if wall <= 0 {
		return cpuUse{}
	}
	u := cpuUse{client: (b.self - a.self).Seconds() / wall}
	if a.serverKnown && b.serverKnown {
		u.server, u.serverKnown = (b.server-a.server).Seconds()/wall, true
	}
	if a.machineOK && b.machineOK && b.total > a.total {
		u.machine, u.machineKnown = float64(b.busy-a.busy)/float64(b.total-a.total), true
	}
	return u
}

// saturated reports whether the machine had no CPU to spare.
func (u cpuUse) saturated() bool { return u.machineKnown && u.machine >= 0.9 }

func (u cpuUse) cells() []string {
	server, mach := "n/a", "n/a"
	if u.serverKnown {
		server = fmt.Sprintf("%.2f", u.server)
	}
	if u.machineKnown {
		mach = fmt.Sprintf("%.0f %%", 100*u.machine)
	}
	return []string{fmt.Sprintf("%.2f", u.client), server, mach}
}

// splitCells are the cells under splitHeader: client and proxy (n/a when
// the split is unknown), server and machine.
func (u cpuUse) splitCells() []string {
	c := u.cells()
	client, proxy := "n/a", "n/a"
	if u.split {
		client, proxy = fmt.Sprintf("%.2f", u.client), fmt.Sprintf("%.2f", u.proxy)
	}
	return append([]string{client, proxy}, c[1:]...)
}

var splitHeader = []string{"client CPU", "proxy CPU", "server CPU", "machine CPU"}

// perOp renders the CPU u spent per operation at rate operations/s, in
// microseconds: client, proxy, runtime and the whole process.
func (u cpuUse) perOp(rate float64) []string {
	if !u.split || !(rate > 0) {
		return []string{"n/a", "n/a", "n/a", "n/a"}
	}
	us := func(cores float64) string { return fmt.Sprintf("%.0f", 1e6*cores/rate) }
	return []string{us(u.client), us(u.proxy), us(u.runtime), us(u.client + u.proxy + u.runtime)}
}
