package chunk

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/errs"
)

// noLen hides a reader's Len method: a payload of unknown length.
type noLen struct{ io.Reader }

// TestRoundTrip stores payloads around every boundary (inline limit, chunk
// size) with and without compression, from bytes and from a reader of
// unknown length, and reads them back with Get and with a Reader. The
// chunk table must then hold exactly the current version's chunks.
func TestRoundTrip(t *testing.T) {
	eachParallel(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv)
		const cs = DefaultChunkSize
		// Several chunks and a partial last one: 3 of them by default, 6
		// with -chunk.long (2 MB, 3-9 s a subtest under -race with gzip).
		several := 2*cs + 123
		if *long {
			several = 5*cs + 123
		}
		sizes := []int{0, 1, DefaultInlineLimit, DefaultInlineLimit + 1, cs - 1, cs, cs + 1, several}
		for _, comp := range []Compression{None, Gzip, Zstd} {
			// Always compressed, whatever the size and ratio.
			st := e.store(t, func(o *Options) { o.Compression, o.MinCompressSize, o.MaxCompressRatio = comp, -1, -1 })
			for _, n := range sizes {
				for _, mode := range []string{"bytes", "reader"} {
					name := fmt.Sprintf("%s/%d/%s", comp, n, mode)
					if comp == None {
						name = fmt.Sprintf("none/%d/%s", n, mode)
					}
					t.Run(name, func(t *testing.T) {
						ctx := context.Background()
						key := sKey(name)
						// Compressible text when compressed, so its chunk count differs.
						data := payload(n, uint64(n), comp != None)
						var info Info
						var err error
						if mode == "bytes" {
							info, err = st.Put(ctx, key, data)
						} else {
							info, err = st.PutReader(ctx, key, noLen{iotest.HalfReader(bytes.NewReader(data))})
						}
						if err != nil {
							t.Fatalf("put: %v", err)
						}
						wantComp := comp
						if n == 0 {
							wantComp = None // nothing to compress
						}
						checkInfo(t, info, data, wantComp, cs)
						got, ginfo, err := st.Get(ctx, key)
						if err != nil {
							t.Fatalf("get: %v", err)
						}
						if !bytes.Equal(got, data) {
							t.Fatalf("get: %d bytes differ from the %d put", len(got), len(data))
						}
						if diff := cmp.Diff(info, ginfo, cmp.AllowUnexported(types.AttributeValueMemberS{})); diff != "" {
							t.Errorf("Get's Info differs from Put's (-put +get):\n%s", diff)
						}
						r, err := st.Open(ctx, key)
						if err != nil {
							t.Fatalf("open: %v", err)
						}
						streamed, err := io.ReadAll(iotest.OneByteReader(io.LimitReader(r, 10)))
						if err == nil {
							var rest []byte
							rest, err = io.ReadAll(r)
							streamed = append(streamed, rest...)
						}
						if err != nil || !bytes.Equal(streamed, data) {
							t.Fatalf("reader: %d bytes, %v; want the %d put", len(streamed), err, len(data))
						}
						sinfo, err := st.Stat(ctx, key)
						if err != nil || sinfo.Version != info.Version || sinfo.Size != int64(n) || sinfo.SHA256 != info.SHA256 {
							t.Errorf("stat: %+v, %v", sinfo, err)
						}
						// Exactly this version's chunks, nothing else of this key.
						var mine []string
						for _, k := range e.chunkKeys(t) {
							if strings.HasPrefix(k, name+"#") {
								mine = append(mine, k)
							}
						}
						if diff := cmp.Diff(versionKeys(t, key, info), mine); diff != "" {
							t.Errorf("chunk keys (-want +got):\n%s", diff)
						}
					})
				}
			}
		}
	})
}

// checkInfo compares what Put reports with what the payload implies.
func checkInfo(t *testing.T, info Info, data []byte, comp Compression, cs int) {
	t.Helper()
	if info.Size != int64(len(data)) || info.SHA256 != sha256.Sum256(data) || info.Compression != comp {
		t.Errorf("info %+v: want size %d, the payload's SHA-256 and compression %q", info, len(data), comp)
	}
	if comp == None && info.StoredSize != info.Size {
		t.Errorf("stored %d bytes of an uncompressed %d", info.StoredSize, info.Size)
	}
	want := 0
	if info.StoredSize > DefaultInlineLimit {
		want = int((info.StoredSize + int64(cs) - 1) / int64(cs))
	}
	if info.Chunks != want {
		t.Errorf("%d chunks for %d stored bytes, want %d", info.Chunks, info.StoredSize, want)
	}
}

// TestOverwrite replaces payloads of every shape with each other: the old
// version's chunks go, Get returns the new payload, ChunkPrevious records
// the replaced version.
func TestOverwrite(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv)
		st := e.store(t, func(o *Options) { o.ChunkSize = 1000; o.InlineLimit = 100 })
		ctx := context.Background()
		key := sKey("k")
		var prev Info
		for i, n := range []int{5000, 50, 0, 3000, 3000, 101, 10_000} {
			data := payload(n, uint64(i), false)
			info, err := st.Put(ctx, key, data)
			if err != nil {
				t.Fatalf("put %d: %v", i, err)
			}
			got, _, err := st.Get(ctx, key)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("get after put %d: %d bytes, %v", i, len(got), err)
			}
			if diff := cmp.Diff(versionKeys(t, key, info), e.chunkKeys(t)); diff != "" {
				t.Errorf("put %d: chunk keys (-want +got):\n%s", i, diff)
			}
			cur, err := st.readCurrent(ctx, key)
			if err != nil || cur.prev != prev.Version {
				t.Errorf("put %d: ChunkPrevious %q, %v; want %q", i, cur.prev, err, prev.Version)
			}
			prev = info
		}
	})
}

// TestKeys exercises parent tables with composite, number and binary keys,
// including number spellings DynamoDB considers equal.
func TestKeys(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv, "n:N", "b:B")
		st := e.store(t, func(o *Options) { o.ChunkSize = 1000 })
		ctx := context.Background()
		key := func(n string) Key {
			return Key{PartitionName: "n", Partition: &types.AttributeValueMemberN{Value: n},
				SortName: "b", Sort: &types.AttributeValueMemberB{Value: []byte{0, 0xff, '#'}}}
		}
		data := payload(4321, 7, false)
		if _, err := st.Put(ctx, key("1.50"), data); err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"1.5", "15E-1", "0001.500"} {
			got, _, err := st.Get(ctx, key(n))
			if err != nil || !bytes.Equal(got, data) {
				t.Errorf("get %s: %d bytes, %v", n, len(got), err)
			}
		}
		if !strings.HasPrefix(e.chunkKeys(t)[0], "1.5#AP8j#") {
			t.Errorf("chunk key %q: want the guide's layout 1.5#AP8j#<version>#<seq>", e.chunkKeys(t)[0])
		}
	})
}

type thread struct {
	ForumName string
	Subject   string
	Tags      []string `dynamodbav:",stringset"`
	Views     int
}

// TestAttributes stores caller attributes beside the payload.
func TestAttributes(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv, "ForumName:S", "Subject:S")
		st := e.store(t)
		ctx := context.Background()
		key := Key{PartitionName: "ForumName", Partition: &types.AttributeValueMemberS{Value: "DynamoDB"},
			SortName: "Subject", Sort: &types.AttributeValueMemberS{Value: "Thread1"}}
		// An attribute someone else keeps on the parent survives Puts.
		if _, err := e.c.PutItem(ctx, &dynamodb.PutItemInput{TableName: &e.parents, Item: map[string]types.AttributeValue{
			"ForumName": key.Partition, "Subject": key.Sort, "Owner": &types.AttributeValueMemberS{Value: "ann"},
		}}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.Get(ctx, key); !errors.Is(err, ErrNotFound) {
			t.Errorf("get of a parent without payload: got %v, want ErrNotFound", err)
		}
		in := thread{ForumName: "DynamoDB", Subject: "Thread1", Tags: []string{"a", "b"}, Views: 3}
		data := payload(DefaultChunkSize+10, 1, true)
		if _, err := st.Put(ctx, key, data, func(o *PutOptions) { o.Attributes = in }); err != nil {
			t.Fatal(err)
		}
		_, info, err := st.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		var out thread
		if err := info.UnmarshalAttributes(&out); err != nil {
			t.Fatal(err)
		}
		out.ForumName, out.Subject = in.ForumName, in.Subject // key attributes are not repeated
		if diff := cmp.Diff(in, out); diff != "" {
			t.Errorf("attributes (-put +get):\n%s", diff)
		}
		if owner, ok := info.Attributes["Owner"].(*types.AttributeValueMemberS); !ok || owner.Value != "ann" {
			t.Errorf("other attribute: got %v, want it kept", info.Attributes["Owner"])
		}

		bad := []struct {
			name  string
			attrs any
		}{
			{"reserved", map[string]types.AttributeValue{"ChunkVersion": &types.AttributeValueMemberS{Value: "x"}}},
			{"other key value", thread{ForumName: "S3", Subject: "Thread1"}},
		}
		for _, b := range bad {
			if _, err := st.Put(ctx, key, nil, func(o *PutOptions) { o.Attributes = b.attrs }); !errors.Is(err, ErrReserved) {
				t.Errorf("%s: got %v, want ErrReserved", b.name, err)
			}
		}
		huge := map[string]types.AttributeValue{"Big": &types.AttributeValueMemberB{Value: make([]byte, 409_000)}}
		if _, err := st.Put(ctx, key, make([]byte, 4000), func(o *PutOptions) { o.Attributes = huge }); !errors.Is(err, ErrTooLarge) {
			t.Errorf("parent over the item limit: got %v, want ErrTooLarge", err)
		}

		if err := st.Delete(ctx, key); err != nil {
			t.Fatal(err)
		}
		out2, err := e.c.GetItem(ctx, &dynamodb.GetItemInput{TableName: &e.parents, Key: key.item(), ConsistentRead: aws.Bool(true)})
		if err != nil || out2.Item != nil {
			t.Errorf("after Delete the parent item is %v, %v; want it gone", out2.Item, err)
		}
		if keys := e.chunkKeys(t); len(keys) != 0 {
			t.Errorf("after Delete %d chunks remain", len(keys))
		}
	})
}

// TestRejectedUpFront checks that inputs that can never be stored make no
// request at all (or, for a reader of unknown length, leave nothing).
func TestRejectedUpFront(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv)
		c, h := e.countingClient()
		st := newStore(t, c, e.parents, e.chunks, func(o *Options) { o.MaxSize = 10_000; o.ChunkSize = 1000 })
		ctx := context.Background()
		longKey := sKey(strings.Repeat("k", 2020))
		tests := []struct {
			name string
			put  func() error
			want error
		}{
			{"bytes over MaxSize", func() error { _, err := st.Put(ctx, sKey("a"), make([]byte, 10_001)); return err }, ErrTooLarge},
			{"sized reader over MaxSize", func() error {
				_, err := st.PutReader(ctx, sKey("a"), bytes.NewReader(make([]byte, 10_001)))
				return err
			}, ErrTooLarge},
			{"key too long for chunk keys", func() error { _, err := st.Put(ctx, longKey, nil); return err }, ErrInvalidKey},
			{"invalid key", func() error { _, err := st.Put(ctx, sKey(""), nil); return err }, ErrInvalidKey},
		}
		for _, tt := range tests {
			h.reset()
			if err := tt.put(); !errors.Is(err, tt.want) {
				t.Errorf("%s: got %v, want %v", tt.name, err, tt.want)
			}
			if n := h.total(); n != 0 {
				t.Errorf("%s: %d requests, want 0", tt.name, n)
			}
		}
		// Unknown length: detected while streaming, cleaned up, invisible.
		_, err := st.PutReader(ctx, sKey("a"), noLen{bytes.NewReader(make([]byte, 10_001))})
		if !errors.Is(err, ErrTooLarge) {
			t.Errorf("unknown length over MaxSize: got %v, want ErrTooLarge", err)
		}
		if keys := e.chunkKeys(t); len(keys) != 0 {
			t.Errorf("%d chunks left behind", len(keys))
		}
		if _, err := st.Stat(ctx, sKey("a")); !errors.Is(err, ErrNotFound) {
			t.Errorf("stat: got %v, want ErrNotFound", err)
		}
		// A failing reader: the same.
		boom := errors.New("boom")
		_, err = st.PutReader(ctx, sKey("a"), io.MultiReader(bytes.NewReader(make([]byte, 5000)), iotest.ErrReader(boom)))
		if !errors.Is(err, boom) {
			t.Errorf("failing reader: got %v, want its error", err)
		}
		if keys := e.chunkKeys(t); len(keys) != 0 {
			t.Errorf("%d chunks left behind", len(keys))
		}
	})
}

// TestNotFound: reads of a key without payload fail with ErrNotFound (the
// value every dynashard package shares); Delete of one succeeds, as
// DeleteItem does, whether the parent item is absent or holds no payload
// (which Delete then leaves alone), and so does deleting twice.
func TestNotFound(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv)
		st := e.store(t)
		ctx := context.Background()
		k := sKey("missing")
		_, _, err := st.Get(ctx, k)
		_, err2 := st.Open(ctx, k)
		_, err3 := st.Stat(ctx, k)
		for i, err := range []error{err, err2, err3} {
			if !errors.Is(err, ErrNotFound) || !errors.Is(err, errs.NotFound) {
				t.Errorf("call %d: got %v, want ErrNotFound", i, err)
			}
		}
		if err := st.Delete(ctx, k); err != nil {
			t.Errorf("delete of an absent parent: got %v, want nil", err)
		}

		bare := sKey("no payload")
		item := map[string]types.AttributeValue{"pk": bare.Partition, "Owner": &types.AttributeValueMemberS{Value: "ann"}}
		if _, err := e.c.PutItem(ctx, &dynamodb.PutItemInput{TableName: &e.parents, Item: item}); err != nil {
			t.Fatal(err)
		}
		if err := st.Delete(ctx, bare); err != nil {
			t.Errorf("delete of a parent without payload: got %v, want nil", err)
		}
		out, err := e.c.GetItem(ctx, &dynamodb.GetItemInput{TableName: &e.parents, Key: bare.item(), ConsistentRead: aws.Bool(true)})
		if err != nil || out.Item == nil {
			t.Errorf("the parent without payload: %v, %v; want it left alone", out.Item, err)
		}

		stored := sKey("stored")
		if _, err := st.Put(ctx, stored, payload(DefaultChunkSize+1, 5, false)); err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			if err := st.Delete(ctx, stored); err != nil {
				t.Errorf("delete %d: got %v, want nil", i+1, err)
			}
		}
		if _, err := st.Stat(ctx, stored); !errors.Is(err, ErrNotFound) {
			t.Errorf("stat after delete: got %v, want ErrNotFound", err)
		}
		if keys := e.keysOf(t, stored); len(keys) != 0 {
			t.Errorf("%d chunks left after delete, want none", len(keys))
		}
	})
}
