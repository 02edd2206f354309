// Package s3blob keeps the payloads that package chunk offloads
// (chunk.Options Objects) in an Amazon S3 bucket. New returns a
// chunk.ObjectStore on an *s3.Client. It is a module of its own,
// github.com/dynashard/dynashard/s3blob. So the library's go.mod does not
// list the S3 SDK, and programs that do not offload never build it.
//
//	bucket, err := s3blob.New(s3.NewFromConfig(cfg), "my-bucket")
//	st, err := chunk.New(ddb, "Thread", "ThreadChunks", func(o *chunk.Options) {
//		o.Objects = bucket // payloads of 1 MiB and more go to S3
//	})
//
// An object of up to Options.PartSize bytes goes up with one PutObject. A
// larger one goes up with a multipart upload. Its parts (PartSize bytes
// each, the last shorter) are read from the payload stream in order and
// sent Options.Concurrency at a time. So Put holds at most Concurrency+1
// parts, whatever the payload's size. Every part and single object is sent
// from memory, so the SDK can compute its checksum before sending and
// retry it.
//
// A failed multipart upload is aborted, unless ctx is done. A bucket
// lifecycle rule (AbortIncompleteMultipartUpload) should remove what an
// abort could not, as for any S3 writer. Reads are ranged GETs. A missing
// object is an error matching fs.ErrNotExist, as chunk.ObjectStore asks.
//
// The package is tested against s3rver and DynamoDB Local and dynalite.
// The tests live in the in-repository module internal/integrationtest,
// which is never released. Its s3fault proxy makes S3 fail: 5xx, a reset
// mid-upload.
package s3blob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"reflect"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"golang.org/x/sync/errgroup"

	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/chunk"
)

// Client is the part of *s3.Client a Bucket uses.
type Client interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	CreateMultipartUpload(ctx context.Context, in *s3.CreateMultipartUploadInput, optFns ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error)
	UploadPart(ctx context.Context, in *s3.UploadPartInput, optFns ...func(*s3.Options)) (*s3.UploadPartOutput, error)
	CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, optFns ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error)
	AbortMultipartUpload(ctx context.Context, in *s3.AbortMultipartUploadInput, optFns ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, optFns ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	DeleteObjects(ctx context.Context, in *s3.DeleteObjectsInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error)
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
}

var (
	_ Client            = (*s3.Client)(nil)
	_ chunk.ObjectStore = (*Bucket)(nil)
)

// Limits of S3 multipart uploads, and defaults of Options.
const (
	MinPartSize = 5 << 20 // S3's smallest part but the last
	MaxPartSize = 5 << 30 // S3's largest part
	maxParts    = 10_000  // S3's most parts per upload

	DefaultPartSize    = 8 << 20
	DefaultConcurrency = 4
)

// Options are a Bucket's settings. The zero value of every field selects
// its default.
type Options struct {
	// PartSize is the size of every part of a multipart upload but the
	// last, and the largest object sent with a single PutObject: between
	// MinPartSize and MaxPartSize. Objects of more than 10,000 parts fail.
	// Default DefaultPartSize (8 MiB).
	PartSize int64
	// Concurrency bounds the parts of one upload in flight. Default
	// DefaultConcurrency.
	Concurrency int
}

// Bucket is a chunk.ObjectStore on one S3 bucket. It is safe for concurrent
// use.
type Bucket struct {
	c      Client
	bucket string
	opts   Options
}

// New returns a Bucket storing objects in bucket through c. It makes no
// request. It fails with an error matching dynashard.ErrInvalid for a nil
// client, an empty bucket name, a PartSize outside [MinPartSize,
// MaxPartSize] or a negative Concurrency.
func New(c Client, bucket string, optFns ...func(*Options)) (*Bucket, error) {
	var o Options
	for _, f := range optFns {
		if f != nil {
			f(&o)
		}
	}
	if o.PartSize == 0 {
		o.PartSize = DefaultPartSize
	}
	if o.Concurrency == 0 {
		o.Concurrency = DefaultConcurrency
	}
	switch {
	case c == nil, reflect.ValueOf(c).Kind() == reflect.Pointer && reflect.ValueOf(c).IsNil():
		return nil, invalid("nil client")
	case bucket == "":
		return nil, invalid("empty bucket name")
	case o.PartSize < MinPartSize || o.PartSize > MaxPartSize:
		return nil, invalid("Options.PartSize %d outside [%d, %d]", o.PartSize, MinPartSize, int64(MaxPartSize))
	case o.Concurrency < 0:
		return nil, invalid("negative Options.Concurrency %d", o.Concurrency)
	}
	return &Bucket{c: c, bucket: bucket, opts: o}, nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: s3blob: New: %s", dynashard.ErrInvalid, fmt.Sprintf(format, args...))
}

// Put stores body under key with user metadata meta: with one PutObject if
// body ends within PartSize bytes, else with a multipart upload. An error
// reading body is returned wrapped, after the upload is aborted. A panic on
// one of the upload's goroutines (a Client that panics) aborts the upload
// and is raised again in the goroutine that called Put, so that its
// recover sees it instead of the process dying.
func (b *Bucket) Put(ctx context.Context, key string, body io.Reader, meta map[string]string) error {
	pool := &parts{size: b.opts.PartSize, free: make(chan []byte, b.opts.Concurrency+1), max: b.opts.Concurrency + 1}
	// The first part grows with the bytes that arrive: a small object
	// costs no full part buffer.
	buf := bytes.NewBuffer(make([]byte, 0, min(b.opts.PartSize, 64<<10)))
	if _, err := buf.ReadFrom(io.LimitReader(body, b.opts.PartSize)); err != nil {
		return fmt.Errorf("s3blob: put %s: reading body: %w", key, err)
	}
	first := buf.Bytes()
	pool.made++
	var err error
	var second []byte
	if len(first) == int(b.opts.PartSize) {
		if second, err = pool.read(ctx, body); err != nil {
			return err
		}
	}
	if len(second) == 0 {
		_, err := b.c.PutObject(ctx, &s3.PutObjectInput{
			Bucket: &b.bucket, Key: &key, Body: bytes.NewReader(first),
			ContentLength: aws.Int64(int64(len(first))), Metadata: meta,
		})
		if err != nil {
			return fmt.Errorf("s3blob: put %s: %w", key, err)
		}
		return nil
	}
	return b.multipart(ctx, key, body, meta, pool, first, second)
}

// parts hands out part buffers, at most max of them, so an upload holds
// max parts at most.
type parts struct {
	size  int64
	mu    sync.Mutex
	made  int
	max   int
	free  chan []byte
	bodyE error // the first error from body, if any
}

// read fills a buffer with the next part of body; a short one is the last.
func (p *parts) read(ctx context.Context, body io.Reader) ([]byte, error) {
	buf, err := p.get(ctx)
	if err != nil {
		return nil, err
	}
	n, err := io.ReadFull(body, buf)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		p.put(buf)
		p.bodyE = err
		return nil, fmt.Errorf("s3blob: reading body: %w", err)
	}
	return buf[:n], nil
}

func (p *parts) get(ctx context.Context) ([]byte, error) {
	p.mu.Lock()
	if p.made < p.max {
		p.made++
		p.mu.Unlock()
		return make([]byte, p.size), nil
	}
	p.mu.Unlock()
	select {
	case b := <-p.free:
		return b[:p.size], nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (p *parts) put(b []byte) { p.free <- b[:cap(b)] }

func (b *Bucket) multipart(ctx context.Context, key string, body io.Reader, meta map[string]string, pool *parts, first, second []byte) error {
	up, err := b.c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &b.bucket, Key: &key, Metadata: meta})
	if err != nil {
		return fmt.Errorf("s3blob: put %s: starting multipart upload: %w", key, err)
	}
	var (
		mu        sync.Mutex
		completed []types.CompletedPart
	)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(b.opts.Concurrency)
	var panicked atomic.Pointer[panicError]
	send := func(num int32, data []byte) {
		g.Go(func() (err error) {
			defer pool.put(data)
			defer recoverPart(&panicked, &err)
			out, err := b.c.UploadPart(gctx, &s3.UploadPartInput{
				Bucket: &b.bucket, Key: &key, UploadId: up.UploadId, PartNumber: aws.Int32(num),
				Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))),
			})
			if err != nil {
				return fmt.Errorf("s3blob: put %s: part %d: %w", key, num, err)
			}
			mu.Lock()
			completed = append(completed, types.CompletedPart{
				PartNumber: aws.Int32(num), ETag: out.ETag,
				ChecksumCRC32: out.ChecksumCRC32, ChecksumCRC32C: out.ChecksumCRC32C, ChecksumCRC64NVME: out.ChecksumCRC64NVME,
				ChecksumSHA1: out.ChecksumSHA1, ChecksumSHA256: out.ChecksumSHA256,
			})
			mu.Unlock()
			return nil
		})
	}
	send(1, first)
	send(2, second)
	var readErr error
	for num := int32(3); len(second) == int(b.opts.PartSize) && gctx.Err() == nil; num++ {
		if num > maxParts {
			readErr = fmt.Errorf("s3blob: put %s: more than %d parts of %d bytes", key, maxParts, b.opts.PartSize)
			break
		}
		data, err := pool.read(gctx, body)
		if err != nil {
			if pool.bodyE != nil || ctx.Err() != nil {
				readErr = err
			} // else an upload failed and cancelled gctx: g.Wait reports it
			break
		}
		if len(data) == 0 {
			pool.put(data)
			break
		}
		send(num, data)
		second = data
	}
	err = errors.Join(readErr, g.Wait())
	if err == nil {
		err = ctx.Err()
	}
	if p := panicked.Load(); p != nil {
		// Abort as for any failed part, then raise the panic where the
		// caller's recover (or net/http's) can see it.
		if ctx.Err() == nil {
			b.c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &b.bucket, Key: &key, UploadId: up.UploadId})
		}
		panic(p)
	}
	if err != nil {
		if ctx.Err() == nil {
			// Best effort: a part store that cannot abort (s3rver) or a
			// failing network leaves the upload to a lifecycle rule.
			b.c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &b.bucket, Key: &key, UploadId: up.UploadId})
		}
		if pool.bodyE != nil {
			return fmt.Errorf("s3blob: put %s: reading body: %w", key, pool.bodyE)
		}
		return err
	}
	slices.SortFunc(completed, func(x, y types.CompletedPart) int { return int(*x.PartNumber - *y.PartNumber) })
	_, err = b.c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: &b.bucket, Key: &key, UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: completed},
	})
	if err != nil {
		if ctx.Err() == nil {
			b.c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &b.bucket, Key: &key, UploadId: up.UploadId})
		}
		return fmt.Errorf("s3blob: put %s: completing multipart upload: %w", key, err)
	}
	return nil
}

// panicError is a panic on one of Put's upload goroutines (a Client that
// panicked, say). It unwraps to the value when that is an error, as the
// root module's panics do.
type panicError struct {
	Value any
	Stack []byte
}

func (e *panicError) Error() string {
	return fmt.Sprintf("s3blob: panic on an upload goroutine, raised again in Put's caller: %v\n\n%s", e.Value, e.Stack)
}

func (e *panicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// recoverPart turns a part upload's panic into an error that cancels the
// upload's other parts, and keeps the first panic for Put to raise.
func recoverPart(first *atomic.Pointer[panicError], err *error) {
	if v := recover(); v != nil {
		p := &panicError{Value: v, Stack: debug.Stack()}
		first.CompareAndSwap(nil, p)
		*err = p
	}
}

// GetRange returns n bytes of the object from offset off, with one ranged
// GET.
func (b *Bucket) GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if off < 0 || n <= 0 {
		return nil, fmt.Errorf("%w: s3blob: get %s: range of %d bytes at %d", dynashard.ErrInvalid, key, n, off)
	}
	out, err := b.c.GetObject(ctx, &s3.GetObjectInput{
		Bucket: &b.bucket, Key: &key, Range: aws.String(fmt.Sprintf("bytes=%d-%d", off, off+n-1)),
	})
	if err != nil {
		return nil, notExist("get", key, err)
	}
	return out.Body, nil
}

// Metadata returns the object's user metadata, with one HEAD request.
func (b *Bucket) Metadata(ctx context.Context, key string) (map[string]string, error) {
	out, err := b.c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b.bucket, Key: &key})
	if err != nil {
		return nil, notExist("head", key, err)
	}
	return out.Metadata, nil
}

// notExist wraps err, making a missing object match fs.ErrNotExist.
func notExist(op, key string, err error) error {
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	var re *smithyhttp.ResponseError
	var ae smithy.APIError
	if errors.As(err, &nsk) || errors.As(err, &nf) ||
		errors.As(err, &ae) && ae.ErrorCode() == "NoSuchKey" ||
		errors.As(err, &re) && re.HTTPStatusCode() == 404 {
		return fmt.Errorf("s3blob: %s %s: %w: %w", op, key, fs.ErrNotExist, err)
	}
	return fmt.Errorf("s3blob: %s %s: %w", op, key, err)
}

// Delete deletes the objects with DeleteObjects, 1,000 keys per request.
func (b *Bucket) Delete(ctx context.Context, keys []string) error {
	for batch := range slices.Chunk(keys, 1000) {
		ids := make([]types.ObjectIdentifier, len(batch))
		for i := range batch {
			ids[i] = types.ObjectIdentifier{Key: &batch[i]}
		}
		out, err := b.c.DeleteObjects(ctx, &s3.DeleteObjectsInput{
			Bucket: &b.bucket, Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)},
		})
		if err != nil {
			return fmt.Errorf("s3blob: delete %d objects: %w", len(batch), err)
		}
		if len(out.Errors) > 0 {
			e := out.Errors[0]
			return fmt.Errorf("s3blob: delete %s: %s: %s (and %d more)", aws.ToString(e.Key), aws.ToString(e.Code), aws.ToString(e.Message), len(out.Errors)-1)
		}
	}
	return nil
}

// List lists the objects under prefix with ListObjectsV2, calling fn once
// per page.
func (b *Bucket) List(ctx context.Context, prefix string, fn func([]chunk.ObjectInfo) error) error {
	p := s3.NewListObjectsV2Paginator(b.c, &s3.ListObjectsV2Input{Bucket: &b.bucket, Prefix: &prefix})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("s3blob: list %s: %w", prefix, err)
		}
		page := make([]chunk.ObjectInfo, 0, len(out.Contents))
		for _, o := range out.Contents {
			page = append(page, chunk.ObjectInfo{Key: aws.ToString(o.Key), Size: aws.ToInt64(o.Size), LastModified: aws.ToTime(o.LastModified)})
		}
		if err := fn(page); err != nil {
			return err
		}
	}
	return nil
}
