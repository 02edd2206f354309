package chunk

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/dynashard/dynashard/internal/locals3"
)

// This file reaches the project's local S3 server (s3rver, package
// internal/locals3) from package chunk's own tests. The S3 adapter,
// module s3blob, cannot be imported here (it requires this module), so
// s3Objects is the smallest ObjectStore over S3's REST API: one PUT per
// object, ranged GETs, HEAD, DELETE and ListObjectsV2, signed with the
// SDK's SigV4 signer. It is a real client of a real server; s3blob's own
// tests cover multipart uploads and S3 faults.

// s3srv is the s3rver the package's tests share, started on first use and
// stopped by TestMain.
var s3srv struct {
	mu  sync.Mutex
	s   *locals3.Server
	err error
}

func s3Server(t testing.TB) *locals3.Server {
	t.Helper()
	s3srv.mu.Lock()
	defer s3srv.mu.Unlock()
	if s3srv.s == nil && s3srv.err == nil {
		s3srv.s, s3srv.err = locals3.Start(context.Background())
	}
	if s3srv.err != nil {
		t.Fatal(s3srv.err)
	}
	return s3srv.s
}

func stopS3() {
	s3srv.mu.Lock()
	defer s3srv.mu.Unlock()
	if s3srv.s != nil {
		s3srv.s.Close()
	}
}

// s3Objects is an ObjectStore on one bucket of an S3 endpoint. It counts
// its requests by method.
type s3Objects struct {
	endpoint, bucket string
	signer           *v4.Signer
	calls            sync.Map // method -> *atomic.Int64
}

var _ ObjectStore = (*s3Objects)(nil)

var s3BucketSeq atomic.Int64

// newS3Objects creates a fresh bucket on the shared s3rver.
func newS3Objects(t testing.TB) *s3Objects {
	t.Helper()
	o := &s3Objects{
		endpoint: s3Server(t).Endpoint,
		bucket:   fmt.Sprintf("chunk-test-%d-%d", os.Getpid(), s3BucketSeq.Add(1)),
		signer:   v4.NewSigner(func(so *v4.SignerOptions) { so.DisableURIPathEscaping = true }),
	}
	resp, err := o.do(context.Background(), http.MethodPut, "", nil, nil, nil)
	if err != nil {
		t.Fatalf("create bucket: %v", err)
	}
	resp.Body.Close()
	return o
}

// count returns the requests sent with method since the last reset.
func (o *s3Objects) count(method string) int {
	if c, ok := o.calls.Load(method); ok {
		return int(c.(*atomic.Int64).Load())
	}
	return 0
}

func (o *s3Objects) reset() { o.calls.Clear() }

// escapeKey escapes an object key as S3 expects it in a path: every byte
// but the unreserved ones and '/'.
func escapeKey(k string) string {
	var b strings.Builder
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.IndexByte("-_.~/", c) >= 0:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// do sends one signed request for key (the bucket itself for "") and
// returns a response with a 2xx status; others are errors, 404 one
// matching fs.ErrNotExist.
func (o *s3Objects) do(ctx context.Context, method, key string, query url.Values, header http.Header, body []byte) (*http.Response, error) {
	c, _ := o.calls.LoadOrStore(method, new(atomic.Int64))
	c.(*atomic.Int64).Add(1)
	path := "/" + o.bucket
	if key != "" {
		path += "/" + key
	}
	u, err := url.Parse(o.endpoint)
	if err != nil {
		return nil, err
	}
	u.Path, u.RawPath, u.RawQuery = path, "/"+o.bucket+"/"+escapeKey(key), query.Encode()
	if key == "" {
		u.RawPath = ""
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.ContentLength = int64(len(body))
	for name, v := range header {
		req.Header[name] = v
	}
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	req.Header.Set("X-Amz-Content-Sha256", hash)
	creds := aws.Credentials{AccessKeyID: "S3RVER", SecretAccessKey: "S3RVER"}
	if err := o.signer.SignHTTP(ctx, creds, req, hash, "s3", "us-east-1", time.Now()); err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound {
			return nil, fmt.Errorf("s3 %s %s: %w", method, key, fs.ErrNotExist)
		}
		return nil, fmt.Errorf("s3 %s %s: %s: %s", method, key, resp.Status, msg)
	}
	return resp, nil
}

func (o *s3Objects) Put(ctx context.Context, key string, body io.Reader, meta map[string]string) error {
	data, err := io.ReadAll(body)
	if err != nil {
		return fmt.Errorf("s3 put %s: %w", key, err)
	}
	h := http.Header{}
	for k, v := range meta {
		h.Set("X-Amz-Meta-"+k, v)
	}
	resp, err := o.do(ctx, http.MethodPut, key, nil, h, data)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

func (o *s3Objects) GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	h := http.Header{"Range": {fmt.Sprintf("bytes=%d-%d", off, off+n-1)}}
	resp, err := o.do(ctx, http.MethodGet, key, nil, h, nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

func (o *s3Objects) Metadata(ctx context.Context, key string) (map[string]string, error) {
	resp, err := o.do(ctx, http.MethodHead, key, nil, nil, nil)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	meta := map[string]string{}
	for name, v := range resp.Header {
		if n := strings.ToLower(name); strings.HasPrefix(n, "x-amz-meta-") && len(v) > 0 {
			meta[strings.TrimPrefix(n, "x-amz-meta-")] = v[0]
		}
	}
	return meta, nil
}

func (o *s3Objects) Delete(ctx context.Context, keys []string) error {
	for _, k := range keys {
		resp, err := o.do(ctx, http.MethodDelete, k, nil, nil, nil)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err == nil {
			resp.Body.Close()
		}
	}
	return nil
}

func (o *s3Objects) List(ctx context.Context, prefix string, fn func([]ObjectInfo) error) error {
	token := ""
	for {
		q := url.Values{"list-type": {"2"}, "prefix": {prefix}}
		if token != "" {
			q.Set("continuation-token", token)
		}
		resp, err := o.do(ctx, http.MethodGet, "", q, nil, nil)
		if err != nil {
			return err
		}
		var page struct {
			Contents []struct {
				Key          string
				Size         string
				LastModified time.Time
			}
			IsTruncated           bool
			NextContinuationToken string
		}
		err = xml.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil {
			return fmt.Errorf("s3 list %s: %w", prefix, err)
		}
		infos := make([]ObjectInfo, 0, len(page.Contents))
		for _, c := range page.Contents {
			size, _ := strconv.ParseInt(c.Size, 10, 64)
			infos = append(infos, ObjectInfo{Key: c.Key, Size: size, LastModified: c.LastModified})
		}
		if err := fn(infos); err != nil {
			return err
		}
		if !page.IsTruncated {
			return nil
		}
		token = page.NextContinuationToken
	}
}
