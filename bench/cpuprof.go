package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
)

// The proxy runs in the bench's process, so the process's CPU time (rusage)
// is the client's (bench, library, SDK) and the proxy's together. To tell
// them apart, every proxy is started under a pprof label, which the
// goroutines it starts inherit (its server, each connection's handler, its
// client to the target), and a CPU profile is taken over each measured
// window: the share of the window's samples that carry the label is the
// proxy's. The Go runtime's background work (the garbage collector's
// workers, the scavenger), which no goroutine of either side runs, is a
// third share; GC assists are charged to the goroutine that allocated.
const proxyLabel, proxyLabelValue = "dynashard-bench", "proxy"

// newProxy is faultproxy.New with every goroutine of the proxy labelled.
func newProxy(target string, cfg faultproxy.Config) (*faultproxy.Proxy, error) {
	var p *faultproxy.Proxy
	var err error
	pprof.Do(context.Background(), pprof.Labels(proxyLabel, proxyLabelValue), func(context.Context) {
		p, err = faultproxy.New(target, cfg)
	})
	return p, err
}

// cpuSplit divides a measured window's process CPU by who spent it. Its
// zero value is "not known".
type cpuSplit struct {
	known                  bool
	client, proxy, runtime time.Duration
}

// add sums two windows' splits; the sum is known only if both are.
func (s cpuSplit) add(o cpuSplit) cpuSplit {
	return cpuSplit{known: s.known && o.known, client: s.client + o.client, proxy: s.proxy + o.proxy, runtime: s.runtime + o.runtime}
}

// runtimeFuncs are the entry points of the runtime's own background work.
// Samples the profiler could not unwind land in runtime._System or
// runtime._ExternalCode: counted there too.
var runtimeFuncs = map[string]bool{
	"runtime.gcBgMarkWorker": true, "runtime.bgsweep": true, "runtime.bgscavenge": true,
	"runtime._GC": true, "runtime._System": true, "runtime._ExternalCode": true,
}

// splitProfile divides total, the process CPU the window's rusage
// measured, in the proportions of p's CPU samples.
func splitProfile(p *profile.Profile, total time.Duration) (cpuSplit, error) {
	vi := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" {
			vi = i
		}
	}
	if vi < 0 {
		return cpuSplit{}, errors.New("profile has no cpu samples")
	}
	var client, proxy, rt int64
	for _, s := range p.Sample {
		v := s.Value[vi]
		switch {
		case len(s.Label[proxyLabel]) > 0 && s.Label[proxyLabel][0] == proxyLabelValue:
			proxy += v
		case inRuntime(s):
			rt += v
		default:
			client += v
		}
	}
	all := client + proxy + rt
	if all == 0 {
		return cpuSplit{known: true, client: total}, nil
	}
	share := func(v int64) time.Duration { return time.Duration(float64(total) * float64(v) / float64(all)) }
	return cpuSplit{known: true, client: share(client), proxy: share(proxy), runtime: share(rt)}, nil
}

func inRuntime(s *profile.Sample) bool {
	for _, loc := range s.Location {
		for _, l := range loc.Line {
			if l.Function != nil && runtimeFuncs[l.Function.Name] {
				return true
			}
		}
	}
	return false
}

// cpuMeter profiles the measured windows. With -cpuprofile it also
// profiles the rest of the run, and close writes every piece merged into
// one profile. A window whose profile cannot be taken (another profiler
// runs) has an unknown split. It is used by one goroutine at a time.
type cpuMeter struct {
	path   string        // -cpuprofile, or ""
	rest   *bytes.Buffer // the profile of the run outside windows, while one runs
	pieces []*profile.Profile
	window *bytes.Buffer // the current window's profile; nil if it could not start
	err    error         // the first error of the -cpuprofile profile
}

func newCPUMeter(path string) (*cpuMeter, error) {
	m := &cpuMeter{path: path}
	if path != "" {
		// Fail now rather than after the run.
		f, err := os.Create(path)
		if err != nil {
			return nil, err
		}
		f.Close()
		if err := m.resume(); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// resume starts profiling the run outside windows.
func (m *cpuMeter) resume() error {
	if m.path == "" {
		return nil
	}
	m.rest = &bytes.Buffer{}
	if err := pprof.StartCPUProfile(m.rest); err != nil {
		m.rest = nil
		return err
	}
	return nil
}

// pause stops profiling the run outside windows and keeps the piece.
func (m *cpuMeter) pause() {
	if m.rest == nil {
		return
	}
	pprof.StopCPUProfile()
	m.keep(m.rest)
	m.rest = nil
}

func (m *cpuMeter) keep(b *bytes.Buffer) {
	if m.path == "" {
		return
	}
	p, err := profile.Parse(b)
	if err != nil {
		m.err = errors.Join(m.err, err)
		return
	}
	m.pieces = append(m.pieces, p)
}

// begin starts a measured window.
func (m *cpuMeter) begin() {
	m.pause()
	m.window = &bytes.Buffer{}
	if pprof.StartCPUProfile(m.window) != nil {
		m.window = nil
	}
}

// end ends the window begun last and splits total, the process CPU its
// rusage measured.
func (m *cpuMeter) end(total time.Duration) cpuSplit {
	defer func() {
		if err := m.resume(); err != nil {
			m.err = errors.Join(m.err, err)
		}
	}()
	if m.window == nil {
		return cpuSplit{}
	}
	pprof.StopCPUProfile()
	b := m.window
	m.window = nil
	p, err := profile.Parse(bytes.NewReader(b.Bytes()))
	if err != nil {
		return cpuSplit{}
	}
	if m.path != "" {
		m.pieces = append(m.pieces, p)
	}
	s, err := splitProfile(p, total)
	if err != nil {
		return cpuSplit{}
	}
	return s
}

// close stops profiling and, with -cpuprofile, writes the merged profile.
func (m *cpuMeter) close() error {
	if m.window != nil {
		pprof.StopCPUProfile()
		m.window = nil
	}
	m.pause()
	if m.path == "" {
		return nil
	}
	if m.err != nil {
		return m.err
	}
	merged, err := profile.Merge(m.pieces)
	if err != nil {
		return err
	}
	f, err := os.Create(m.path)
	if err != nil {
		return err
	}
	if err := merged.Write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// splitNote is the sentence a table with split CPU columns ends with.
func splitNote() string {
	return strings.Join([]string{
		"*client CPU* is the bench's own goroutines: the writers, the library and the SDK (JSON and base64 encoding, request signing, HTTP);",
		"*proxy CPU* is dynashardtest/faultproxy's, which runs in the same process; *runtime* is the Go runtime's background work",
		"(GC workers), which both cause. The process's CPU time (rusage) is divided in the proportions of a CPU profile taken",
		"over the same window, whose samples on the proxy's goroutines carry a pprof label.",
	}, " ")
}
