package chunk

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynashard/dynashard/internal/ddbtest"
)

// errPanic is what the panicking clients, object stores and readers of
// TestNoPanicEscapes panic with.
var errPanic = errors.New("chunk test: deliberate panic")

// panickingObjects is a real object store (on the local S3 server) whose
// method op panics, as a user's adapter with a bug would.
type panickingObjects struct {
	*s3Objects
	op string
}

func (o panickingObjects) check(op string) {
	if o.op == op {
		panic(errPanic)
	}
}

func (o panickingObjects) Put(ctx context.Context, key string, body io.Reader, meta map[string]string) error {
	o.check("Put")
	return o.s3Objects.Put(ctx, key, body, meta)
}

func (o panickingObjects) GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	o.check("GetRange")
	return o.s3Objects.GetRange(ctx, key, off, n)
}

func (o panickingObjects) Metadata(ctx context.Context, key string) (map[string]string, error) {
	o.check("Metadata")
	return o.s3Objects.Metadata(ctx, key)
}

func (o panickingObjects) Delete(ctx context.Context, keys []string) error {
	o.check("Delete")
	return o.s3Objects.Delete(ctx, keys)
}

func (o panickingObjects) List(ctx context.Context, prefix string, fn func([]ObjectInfo) error) error {
	o.check("List")
	return o.s3Objects.List(ctx, prefix, fn)
}

// panickingReader returns n bytes and then panics.
type panickingReader struct{ n int }

func (r *panickingReader) Read(b []byte) (int, error) {
	if r.n == 0 {
		panic(errPanic)
	}
	k := min(len(b), r.n)
	clear(b[:k])
	r.n -= k
	return k, nil
}

// TestNoPanicEscapes (issue 20, item 5): every entry point of a Store,
// driven with a client that panics on the operation the call depends on,
// a panicking ObjectStore or reader, or a nil or typed-nil input, either
// returns an error (for bad input one matching ErrInvalid, before any
// request) or panics in the caller's goroutine, where recover works, once
// its goroutines have ended (TestMain checks that none is left). Nothing
// panics on a goroutine of the package's, which would end the process.
func TestNoPanicEscapes(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		ctx := context.Background()
		e := newEnv(t, srv)
		small := func(o *Options) { o.ChunkSize, o.InlineLimit = 1000, 100 }
		st := e.store(t, small)
		key, objKey := sKey("chunked"), sKey("object")
		data := payload(10_000, 1, false) // ten chunks, read by several requests
		if _, err := st.Put(ctx, key, data); err != nil {
			t.Fatal(err)
		}
		objects := newS3Objects(t)
		withObjects := func(o ObjectStore) func(*Options) {
			return func(opts *Options) { opts.Objects, opts.ObjectThreshold = o, 1 }
		}
		if _, err := e.store(t, small, withObjects(objects)).Put(ctx, objKey, data); err != nil {
			t.Fatal(err)
		}
		parent, err := e.c.GetItem(ctx, &dynamodb.GetItemInput{TableName: &e.parents, Key: key.item(), ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		// panicsOn is a Store whose client panics on the operations ops
		// (every operation if none).
		panicsOn := func(ops ...string) *Store {
			return newStore(t, srv.Client(ddbtest.PanicOn(errPanic, ops...)), e.parents, e.chunks, small)
		}
		objectPanics := func(op string) *Store {
			return e.store(t, small, withObjects(panickingObjects{objects, op}))
		}
		read := func(st *Store, key Key) error {
			r, err := st.Open(ctx, key)
			if err != nil {
				return err
			}
			defer r.Close()
			_, err = io.Copy(io.Discard, r)
			return err
		}
		c, oc := e.countingClient()
		counted := newStore(t, c, e.parents, e.chunks, small)
		for _, tc := range []struct {
			name string
			// want is errPanic for a panic with it in this goroutine, and
			// otherwise an error matching it before any request.
			want error
			call func() error
		}{
			// A client that panics on the request the call depends on.
			{"Get, BatchGetItem panics", errPanic, func() error { _, _, err := panicsOn("BatchGetItem").Get(ctx, key); return err }},
			{"Open and Read, BatchGetItem panics", errPanic, func() error { return read(panicsOn("BatchGetItem"), key) }},
			{"Resolve, BatchGetItem panics", errPanic, func() error {
				_, _, err := panicsOn("BatchGetItem").Resolve(ctx, key, parent.Item)
				return err
			}},
			{"Stat, GetItem panics", errPanic, func() error { _, err := panicsOn("GetItem").Stat(ctx, key); return err }},
			{"Put, BatchWriteItem panics", errPanic, func() error { _, err := panicsOn("BatchWriteItem").Put(ctx, sKey("p1"), data); return err }},
			{"Put, every request panics", errPanic, func() error { _, err := panicsOn().Put(ctx, sKey("p2"), data[:10]); return err }},
			{"Delete, every request panics", errPanic, func() error { return panicsOn().Delete(ctx, key) }},
			{"Migrate, every request panics", errPanic, func() error {
				_, err := newStore(t, srv.Client(ddbtest.PanicOn(errPanic)), e.parents, e.chunks, GuideLayout).Migrate(ctx, key)
				return err
			}},
			{"Sweep, Scan panics", errPanic, func() error { _, err := panicsOn("Scan").Sweep(ctx); return err }},
			{"Sweep in segments, Scan panics", errPanic, func() error {
				_, err := panicsOn("Scan").Sweep(ctx, func(o *SweepOptions) { o.Segments = 4 })
				return err
			}},
			// A panicking ObjectStore or reader.
			{"Put, ObjectStore.Put panics", errPanic, func() error { _, err := objectPanics("Put").Put(ctx, sKey("p3"), data); return err }},
			{"Get, ObjectStore.GetRange panics", errPanic, func() error { _, _, err := objectPanics("GetRange").Get(ctx, objKey); return err }},
			{"Open and Read, ObjectStore.GetRange panics", errPanic, func() error { return read(objectPanics("GetRange"), objKey) }},
			{"Sweep, ObjectStore.List panics", errPanic, func() error { _, err := objectPanics("List").Sweep(ctx); return err }},
			{"PutReader, reader panics", errPanic, func() error {
				_, err := st.PutReader(ctx, sKey("p4"), &panickingReader{n: 5000})
				return err
			}},
			// A nil or typed-nil input.
			{"New, nil client", ErrInvalid, func() error { _, err := New(nil, e.parents, e.chunks); return err }},
			{"New, typed-nil client", ErrInvalid, func() error { _, err := New((*dynamodb.Client)(nil), e.parents, e.chunks); return err }},
			{"New, typed-nil ObjectStore", ErrInvalid, func() error {
				_, err := New(c, e.parents, e.chunks, withObjects((*s3Objects)(nil)))
				return err
			}},
			{"PutReader, typed-nil reader", ErrInvalid, func() error { _, err := counted.PutReader(ctx, sKey("p5"), (*bytes.Buffer)(nil)); return err }},
			{"zero Store Sweep", ErrInvalid, func() error { _, err := (&Store{}).Sweep(ctx); return err }},
		} {
			t.Run(tc.name, func(t *testing.T) {
				oc.reset()
				ddbtest.NoEscape(t, tc.call, errPanic, tc.want, nil, func() int { return int(oc.total()) })
			})
		}
		if got, _, err := st.Get(ctx, key); err != nil || !bytes.Equal(got, data) {
			t.Errorf("Get after the panics: %d bytes, %v; want the payload", len(got), err)
		}
	})
}
