// Package locals3 installs, starts and stops the real S3-compatible server
// that the S3 offload of package chunk (module s3blob) is tested against:
// s3rver 3.7.1 on Node.js, from the npm registry, pinned by its lockfile's
// integrity hashes and cached beside the DynamoDB servers
// (localddb.CacheDir). A started server listens on a free loopback port,
// stores objects in a temporary folder removed by Close, and dies with the
// process that started it.
//
// # Why s3rver
//
// The offload needs single PUTs with user metadata, multipart upload
// (create, parts, complete), ranged GETs, HEAD, ListObjectsV2 with
// continuation and DeleteObjects; it needs no conditional write, because
// every write attempt has a key of its own and the conditional step is the
// DynamoDB parent flip. s3rver 3.7.1 has all of these, installs in seconds
// from the npm registry with the same npm ci --ignore-scripts pattern as
// dynalite, and adds nothing to any Go module. versitygw and MinIO (Go
// modules) are more faithful but would be built from source on every fresh
// machine (hundreds of dependencies, minutes of compilation on two cores)
// for behaviour the offload does not use.
//
// Gaps of s3rver against Amazon S3, none of which the offload relies on:
// no AbortMultipartUpload (405; the adapter's abort is best-effort and its
// failure ignored) and no ListMultipartUploads; a multipart completion
// checks neither the 5 MiB minimum part size nor the parts' ETags; no
// aws-chunked bodies, so a client must send seekable bodies, whose
// checksums the SDK computes before sending over plain HTTP (s3blob sends
// every part from memory); no conditional writes (If-None-Match, If-Match
// on PUT); no versioning, lifecycle rules or object lock. It checks SigV4
// signatures against its built-in account: clients use the access key
// S3RVER with the secret S3RVER, and path-style addressing.
package locals3

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/dynashard/dynashard/internal/localddb"
)

// Version is the pinned s3rver release.
const Version = "3.7.1"

// Server is a running s3rver. Close stops it.
type Server struct {
	Endpoint string // http://127.0.0.1:port

	cmd     *exec.Cmd
	stdin   io.Closer
	dir     string // where objects are stored
	exited  chan struct{}
	output  *tailBuffer
	closeMu sync.Once
	err     error
}

// Start installs s3rver if needed and starts it on a free loopback port
// with an empty store, returning once it answers HTTP requests. Buckets are
// created by the caller (CreateBucket).
func Start(ctx context.Context) (*Server, error) {
	installed, err := Install(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := exec.LookPath("node"); err != nil {
		return nil, fmt.Errorf("locals3: node not found on PATH: install Node.js 20 (needed for s3rver)")
	}
	dir, err := os.MkdirTemp("", "dynashard-s3-")
	if err != nil {
		return nil, fmt.Errorf("locals3: %w", err)
	}
	s := &Server{dir: dir, exited: make(chan struct{}), output: &tailBuffer{}}
	s.cmd = exec.Command("node", filepath.Join(installed, "launch.js"), dir)
	s.cmd.Dir = installed
	s.cmd.Stderr = s.output
	localddb.BindToParent(s.cmd)
	fail := func(err error) (*Server, error) {
		s.Close()
		return nil, err
	}
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		return fail(fmt.Errorf("locals3: %w", err))
	}
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		return fail(fmt.Errorf("locals3: %w", err))
	}
	if err := s.cmd.Start(); err != nil {
		return fail(fmt.Errorf("locals3: start s3rver: %w", err))
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.exited)
	}()
	port, err := localddb.ReadPort(stdout, s.output)
	if err != nil {
		return fail(fmt.Errorf("locals3: s3rver: %w\n%s", err, s.output.String()))
	}
	s.Endpoint = "http://127.0.0.1:" + strconv.Itoa(port)
	if err := s.waitReady(ctx); err != nil {
		return fail(err)
	}
	return s, nil
}

// waitReady waits for any HTTP answer: s3rver listens before it prints its
// port, so this normally succeeds at once.
func (s *Server) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.Endpoint+"/", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("locals3: s3rver exited before answering: %v\n%s", s.err, s.output.String())
		case <-ctx.Done():
			return fmt.Errorf("locals3: s3rver did not answer at %s: %w (last error: %v)", s.Endpoint, ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Close stops the server, waits for it to exit and removes its objects. It
// is safe to call more than once.
func (s *Server) Close() error {
	s.closeMu.Do(func() {
		if s.cmd != nil && s.cmd.Process != nil {
			if s.stdin != nil {
				s.stdin.Close() // launch.js exits on EOF
			}
			select {
			case <-s.exited:
			case <-time.After(5 * time.Second):
				s.cmd.Process.Kill()
				<-s.exited
			}
		}
		os.RemoveAll(s.dir)
	})
	return nil
}

// tailBuffer keeps the tail of the server's output for error messages.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > 64<<10 {
		b.buf = append([]byte(nil), b.buf[len(b.buf)-32<<10:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
