package dynashardtest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const helperEnv = "DYNASHARDTEST_HELPER_KIND"

// TestHelperProcess is the test binary killed in TestNoOrphan; run
// normally it does nothing.
func TestHelperProcess(t *testing.T) {
	kind := os.Getenv(helperEnv)
	if kind == "" {
		return
	}
	s, err := NewServer(withKind(Kind(kind)))
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	fmt.Println("ENDPOINT", s.Endpoint())
	time.Sleep(time.Minute) // killed long before
	os.Exit(1)
}

// TestNoOrphan: a test binary killed by SIGKILL, which runs no cleanup,
// leaves no server behind.
func TestNoOrphan(t *testing.T) {
	for _, k := range kinds {
		t.Run(string(k), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
			cmd.Env = append(os.Environ(), helperEnv+"="+string(k))
			cmd.Stderr = os.Stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			line, err := bufio.NewReader(out).ReadString('\n')
			endpoint, ok := strings.CutPrefix(strings.TrimSpace(line), "ENDPOINT ")
			if err != nil || !ok {
				t.Fatalf("helper said %q, %v; want ENDPOINT <url>", line, err)
			}
			if err := answers(endpoint); err != nil {
				t.Fatalf("helper's server: %v", err)
			}
			cmd.Process.Kill()
			cmd.Wait()
			// A safety bound, not a speed: the kernel's SIGKILL lands at
			// once; a loaded machine may take seconds to let the server go.
			deadline := time.Now().Add(time.Minute)
			for answers(endpoint) == nil {
				if time.Now().After(deadline) {
					t.Fatalf("%s still answers a minute after its test binary was killed", endpoint)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
}

// TestLockedThreadExit: the server outlives the thread its first caller
// ran on. The kernel kills a server when the thread that forked it ends
// (Pdeathsig is per thread), and a goroutine that returns while locked to
// a thread ends that thread.
func TestLockedThreadExit(t *testing.T) {
	type result struct {
		s   *Server
		err error
		tid int
	}
	done := make(chan result)
	release := make(chan struct{})
	defer close(release)
	var call func()
	call = func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if syscall.Gettid() == os.Getpid() {
			// The main thread is parked, not ended, when its goroutine
			// returns locked: hold it, and call from another thread.
			go call()
			<-release
			runtime.UnlockOSThread()
			return
		}
		s, err := NewServer(withKind(Dynalite))
		done <- result{s, err, syscall.Gettid()}
	}
	go call()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.s.Close()
	task := "/proc/self/task/" + strconv.Itoa(r.tid)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(task); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("thread %d of the caller did not end", r.tid)
		}
	}
	time.Sleep(200 * time.Millisecond) // a SIGKILL would have landed by now
	if err := answers(r.s.Endpoint()); err != nil {
		t.Errorf("after the caller's thread ended: %v", err)
	}
}
