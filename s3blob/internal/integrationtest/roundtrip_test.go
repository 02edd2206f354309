package integrationtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/chunk"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/s3blob"
	"github.com/dynashard/dynashard/s3blob/internal/integrationtest/s3fault"
)

const threshold = 64 << 10

// TestRoundTrip stores payloads at every size boundary (empty, one below
// the threshold, the threshold, one below, at and above the multipart
// part size, several parts) with Put and PutReader, and reads each back
// with Get and a streaming Reader: below the threshold the payload stays in
// DynamoDB, from it on it is one object, sent as one PUT up to the part
// size and as a multipart upload beyond.
func TestRoundTrip(t *testing.T) {
	eachParallel(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv)
		ctx := context.Background()
		blob := e.blob(t, e.s3p, func(o *s3blob.Options) { o.PartSize = s3blob.MinPartSize; o.Concurrency = 2 })
		st := e.store(t, e.ddb, blob, func(o *chunk.Options) { o.ObjectThreshold = threshold })
		sizes := []int{0, threshold - 1, threshold, s3blob.MinPartSize - 1, s3blob.MinPartSize, s3blob.MinPartSize + 1, 2*s3blob.MinPartSize + 3}
		for i, n := range sizes {
			for _, method := range []string{"Put", "PutReader"} {
				t.Run(fmt.Sprintf("%d/%s", n, method), func(t *testing.T) {
					key := sKey(fmt.Sprintf("rt-%d-%s", i, method))
					data := payload(n, uint64(i))
					puts, _ := e.proxy.Count(s3fault.PutObject)
					parts, _ := e.proxy.Count(s3fault.UploadPart)
					var info chunk.Info
					var err error
					if method == "Put" {
						info, err = st.Put(ctx, key, data)
					} else {
						info, err = st.PutReader(ctx, key, &genReader{seed: uint64(i), n: int64(n)})
					}
					if err != nil {
						t.Fatal(err)
					}
					puts2, _ := e.proxy.Count(s3fault.PutObject)
					parts2, _ := e.proxy.Count(s3fault.UploadPart)
					offloaded := n >= threshold
					if (info.Object != "") != offloaded {
						t.Fatalf("Info.Object = %q for %d bytes, threshold %d", info.Object, n, threshold)
					}
					wantPuts, wantParts := 0, 0
					if offloaded && n <= s3blob.MinPartSize {
						wantPuts = 1
					} else if offloaded {
						wantParts = (n + s3blob.MinPartSize - 1) / s3blob.MinPartSize
					}
					if puts2-puts != wantPuts || parts2-parts != wantParts {
						t.Errorf("%d PutObject and %d UploadPart requests, want %d and %d", puts2-puts, parts2-parts, wantPuts, wantParts)
					}
					if info.Size != int64(n) || info.SHA256 != sha256.Sum256(data) {
						t.Errorf("info %+v does not describe the payload", info)
					}
					got, ginfo, err := st.Get(ctx, key)
					if err != nil || !bytes.Equal(got, data) {
						t.Fatalf("get: %d bytes, %v; want the %d bytes put", len(got), err, n)
					}
					if ginfo.Object != info.Object || ginfo.Version != info.Version {
						t.Errorf("get info %+v, put info %+v", ginfo, info)
					}
					r, err := st.Open(ctx, key)
					if err != nil {
						t.Fatal(err)
					}
					h := sha256.New()
					if _, err := io.Copy(h, r); err != nil {
						t.Fatal(err)
					}
					r.Close()
					if [32]byte(h.Sum(nil)) != info.SHA256 {
						t.Errorf("streamed payload differs")
					}
					if offloaded {
						if objs := e.objectsOf(t, "rt-"+fmt.Sprint(i)+"-"+method); len(objs) != 1 || objs[0] != info.Object {
							t.Errorf("bucket holds %q for the key, want only %q", objs, info.Object)
						}
					}
				})
			}
		}
	})
}

// TestReplaceAcrossLayouts replaces an object by chunks and chunks by an
// object: each Put removes what it replaced, and Delete removes the parent
// and then the object.
func TestReplaceAcrossLayouts(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv)
		ctx := context.Background()
		st := e.store(t, e.ddb, e.blob(t, e.s3), func(o *chunk.Options) { o.ObjectThreshold = threshold; o.ChunkSize = 16 << 10 })
		key := sKey("swap")
		big, small := payload(threshold+5, 1), payload(threshold-5, 2)
		i1, err := st.Put(ctx, key, big)
		if err != nil {
			t.Fatal(err)
		}
		i2, err := st.Put(ctx, key, small)
		if err != nil {
			t.Fatal(err)
		}
		if i2.Object != "" || i2.Chunks == 0 {
			t.Fatalf("small payload: %+v, want chunks", i2)
		}
		if e.exists(t, i1.Object) {
			t.Errorf("object %s of the replaced version is still there", i1.Object)
		}
		i3, err := st.Put(ctx, key, big)
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := st.Get(ctx, key, func(o *chunk.Options) { o.ConsistentRead = true })
		if err != nil || !bytes.Equal(got, big) {
			t.Fatalf("get: %v", err)
		}
		if err := st.Delete(ctx, key); err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.Get(ctx, key, func(o *chunk.Options) { o.ConsistentRead = true }); !errors.Is(err, dynashard.ErrNotFound) {
			t.Errorf("get after delete: %v", err)
		}
		if e.exists(t, i3.Object) {
			t.Errorf("object %s survived Delete", i3.Object)
		}
		if objs := e.objects(t); len(objs) != 0 {
			t.Errorf("bucket still holds %q", objs)
		}
	})
}

// TestOffloadedParent checks what an offloaded parent records: ChunkCount
// -1 and the object key, so that a reader that knows only chunks refuses
// it rather than reading an empty or inline payload; a Store without
// Objects says why it cannot read it; the object's metadata names the
// parent; and every payload goes to S3 with a negative threshold, the
// empty one too.
func TestOffloadedParent(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv)
		ctx := context.Background()
		st := e.store(t, e.ddb, e.blob(t, e.s3), func(o *chunk.Options) { o.ObjectThreshold = -1 })
		key := sKey("always")
		info, err := st.Put(ctx, key, nil)
		if err != nil {
			t.Fatal(err)
		}
		if info.Object == "" {
			t.Fatalf("empty payload not offloaded with ObjectThreshold -1: %+v", info)
		}
		out, err := e.ddb.GetItem(ctx, &dynamodb.GetItemInput{TableName: &e.parents, Key: map[string]ddbtypes.AttributeValue{"pk": key.Partition}, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		if c, ok := out.Item["ChunkCount"].(*ddbtypes.AttributeValueMemberN); !ok || c.Value != "-1" {
			t.Errorf("ChunkCount = %#v, want -1", out.Item["ChunkCount"])
		}
		if o, ok := out.Item["ChunkObject"].(*ddbtypes.AttributeValueMemberS); !ok || o.Value != info.Object {
			t.Errorf("ChunkObject = %#v, want %q", out.Item["ChunkObject"], info.Object)
		}
		if _, ok := out.Item["ChunkData"]; ok {
			t.Errorf("offloaded parent has ChunkData")
		}
		head, err := e.s3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &e.bucket, Key: &info.Object})
		if err != nil {
			t.Fatal(err)
		}
		if head.Metadata["dynashard-parent"] == "" || head.Metadata["dynashard-table"] == "" {
			t.Errorf("object metadata %v does not name the parent", head.Metadata)
		}
		got, _, err := st.Get(ctx, key)
		if err != nil || len(got) != 0 {
			t.Errorf("get: %q, %v", got, err)
		}
		plain, err := chunk.New(e.ddb, e.parents, e.chunks)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := plain.Get(ctx, key); err == nil || !bytes.Contains([]byte(err.Error()), []byte("Options.Objects is nil")) {
			t.Errorf("get without Objects: %v, want an error naming Options.Objects", err)
		}
	})
}

// TestCompressedAndDamaged offloads a zstd-compressed payload, read back by
// a Store configured without compression, and then removes its object
// behind the Store's back: the parent still holds that version, so the read
// fails with a *CorruptError, never with bytes.
func TestCompressedAndDamaged(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv)
		ctx := context.Background()
		blob := e.blob(t, e.s3)
		st := e.store(t, e.ddb, blob, func(o *chunk.Options) { o.ObjectThreshold = threshold; o.Compression = chunk.Zstd })
		key := sKey("zstd")
		data := bytes.Repeat([]byte("a forum reply, said again and again. "), 10_000)
		info, err := st.Put(ctx, key, data)
		if err != nil {
			t.Fatal(err)
		}
		if info.Object == "" || info.Compression != chunk.Zstd || info.StoredSize >= info.Size {
			t.Fatalf("info %+v, want a zstd-compressed object", info)
		}
		plain := e.store(t, e.ddb, blob)
		got, _, err := plain.Get(ctx, key)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("get: %v", err)
		}
		if _, err := e.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &e.bucket, Key: &info.Object}); err != nil {
			t.Fatal(err)
		}
		got, _, err = plain.Get(ctx, key)
		var ce *chunk.CorruptError
		if !errors.As(err, &ce) || got != nil {
			t.Errorf("get of a payload whose object is gone: %d bytes, %v; want a *CorruptError", len(got), err)
		}
	})
}

// failingReader returns n bytes of payload, then err.
type failingReader struct {
	genReader
	err error
}

func (f *failingReader) Read(p []byte) (int, error) {
	n, err := f.genReader.Read(p)
	if err == io.EOF {
		return n, f.err
	}
	return n, err
}

// TestPutReaderFailures: a payload reader failing during a multipart
// upload, and a payload above MaxSize, fail PutReader with the reader's
// error (wrapped) or ErrTooLarge; nothing becomes visible and no object is
// left.
func TestPutReaderFailures(t *testing.T) {
	eachParallel(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv)
		ctx := context.Background()
		st := e.store(t, e.ddb, e.blob(t, e.s3, func(o *s3blob.Options) { o.PartSize = s3blob.MinPartSize }),
			func(o *chunk.Options) { o.ObjectThreshold = threshold; o.MaxSize = 3 * s3blob.MinPartSize })
		key := sKey("readerfail")
		old, err := st.Put(ctx, key, payload(threshold, 1))
		if err != nil {
			t.Fatal(err)
		}
		boom := errors.New("boom")
		_, err = st.PutReader(ctx, key, &failingReader{genReader{seed: 2, n: 2*s3blob.MinPartSize + 5}, boom})
		if !errors.Is(err, boom) {
			t.Errorf("put from a failing reader: %v, want it to wrap the reader's error", err)
		}
		_, err = st.PutReader(ctx, key, &genReader{seed: 3, n: 3*s3blob.MinPartSize + 1})
		if !errors.Is(err, chunk.ErrTooLarge) {
			t.Errorf("put above MaxSize: %v, want ErrTooLarge", err)
		}
		info, err := st.Stat(ctx, key, func(o *chunk.Options) { o.ConsistentRead = true })
		if err != nil || info.Version != old.Version {
			t.Errorf("stat: %+v, %v; want the old version", info, err)
		}
		if objs := e.objectsOf(t, "readerfail"); len(objs) != 1 || objs[0] != old.Object {
			t.Errorf("bucket holds %q, want only the old object", objs)
		}
	})
}
