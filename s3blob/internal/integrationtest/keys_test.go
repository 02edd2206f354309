package integrationtest

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/chunk"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/s3blob/internal/integrationtest/s3fault"
)

// TestObjectKeys stores payloads under parent keys that cannot appear in
// an object key as they are (characters outside S3's safe set, a key that
// would take the object key past 1,024 bytes, a composite key with N and
// B values): each object key is the prefix, a hash and the version, the
// payload round-trips, and Sweep finds the parent from the metadata (the
// object is current). A key too long for S3's 2 KB of metadata fails with
// ErrInvalidKey before any request.
func TestObjectKeys(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv)
		ctx := context.Background()
		var ddbCalls atomic.Int64
		ddb := srv.Client(ddbHooks(func(context.Context, string) { ddbCalls.Add(1) }, nil))
		blob := e.blob(t, e.s3p)
		st := e.store(t, ddb, blob, func(o *chunk.Options) { o.ObjectThreshold = -1 })
		prefix := "dynashard/" + e.parents + "/"
		for name, key := range map[string]chunk.Key{
			"unsafe": sKey("a/b c?é"),
			"long":   sKey(strings.Repeat("x", 1000)),
			"plain":  sKey("DynamoDB#Thread1"),
		} {
			info, err := st.Put(ctx, key, []byte(name))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			hashed := strings.HasPrefix(info.Object, prefix+"sha256-")
			if want := name == "unsafe" || name == "long"; hashed != want {
				t.Errorf("%s: object key %q, hashed %v, want %v", name, info.Object, hashed, want)
			}
			if len(info.Object) > 1024 {
				t.Errorf("%s: object key of %d bytes", name, len(info.Object))
			}
			got, _, err := st.Get(ctx, key)
			if err != nil || string(got) != name {
				t.Errorf("%s: get %q, %v", name, got, err)
			}
		}
		comp, err := chunk.New(ddb, srv.Table(t, "pk:N", "sk:B"), e.chunks, func(o *chunk.Options) { o.Objects, o.ObjectThreshold = blob, -1 })
		if err != nil {
			t.Fatal(err)
		}
		ck := chunk.Key{PartitionName: "pk", Partition: &ddbtypes.AttributeValueMemberN{Value: "1.50"}, SortName: "sk", Sort: &ddbtypes.AttributeValueMemberB{Value: []byte{0, 1, 2}}}
		if _, err := comp.Put(ctx, ck, []byte("composite")); err != nil {
			t.Fatal(err)
		}
		for _, s := range []*chunk.Store{st, comp} {
			sweeper := s
			setClock(sweeper, later(chunk.DefaultGrace+time.Minute))
			stats, err := sweeper.Sweep(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if stats.ObjectsDeleted != 0 || stats.ObjectsForeign != 0 || stats.ObjectsCurrent != stats.Objects {
				t.Errorf("sweep: %+v, want every object current", stats)
			}
			setClock(sweeper, time.Now)
		}
		if got, _, err := comp.Get(ctx, ck); err != nil || !bytes.Equal(got, []byte("composite")) {
			t.Errorf("composite key: %q, %v", got, err)
		}

		// 1,600 bytes of key: a valid DynamoDB key, but its metadata would
		// exceed 2 KB.
		before := ddbCalls.Load()
		s3Before := 0
		for _, op := range []s3fault.Op{s3fault.PutObject, s3fault.CreateUpload} {
			n, _ := e.proxy.Count(op)
			s3Before += n
		}
		_, err = st.Put(ctx, sKey(strings.Repeat("y", 1600)), []byte("x"))
		if !errors.Is(err, chunk.ErrInvalidKey) {
			t.Errorf("put under a key too long for the metadata: %v, want ErrInvalidKey", err)
		}
		s3After := 0
		for _, op := range []s3fault.Op{s3fault.PutObject, s3fault.CreateUpload} {
			n, _ := e.proxy.Count(op)
			s3After += n
		}
		if ddbCalls.Load() != before || s3After != s3Before {
			t.Errorf("the rejected put made %d DynamoDB and %d S3 requests", ddbCalls.Load()-before, s3After-s3Before)
		}
	})
}
