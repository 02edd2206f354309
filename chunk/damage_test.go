package chunk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/ddbtest"
)

// TestCorruption damages stored data in every way and expects a
func TestCorruption(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv)
		ctx := context.Background()
		type damage func(t *testing.T, key Key, info Info)
		setChunk := func(t *testing.T, key Key, info Info, seq int, f func([]byte) []byte) {
			prefix, _ := key.prefix()
			k := map[string]types.AttributeValue{"ChunkKey": &types.AttributeValueMemberS{Value: chunkKey(prefix, info.Version, seq)}}
			out, err := e.c.GetItem(ctx, &dynamodb.GetItemInput{TableName: &e.chunks, Key: k, ConsistentRead: aws.Bool(true)})
			if err != nil || out.Item == nil {
				t.Fatalf("read chunk %d: %v", seq, err)
			}
			d := out.Item["Data"].(*types.AttributeValueMemberB).Value
			if d = f(d); d == nil {
				_, err = e.c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &e.chunks, Key: k})
			} else {
				out.Item["Data"] = &types.AttributeValueMemberB{Value: d}
				_, err = e.c.PutItem(ctx, &dynamodb.PutItemInput{TableName: &e.chunks, Item: out.Item})
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		flip := func(seq, at int) damage {
			return func(t *testing.T, key Key, info Info) {
				setChunk(t, key, info, seq, func(d []byte) []byte { d[at%len(d)] ^= 0x40; return d })
			}
		}
		tests := []struct {
			name    string
			comp    Compression
			damage  damage
			wantSeq int
		}{
			{"flipped byte", None, flip(2, 17), 0},
			{"flipped byte in last chunk", None, flip(5, 3), 0},
			{"flipped byte gzip", Gzip, flip(1, 500), 0},
			{"flipped byte zstd", Zstd, flip(1, 500), 0},
			{"flipped zstd frame magic", Zstd, flip(1, 1), 0},
			{"missing chunk", None, func(t *testing.T, key Key, info Info) {
				setChunk(t, key, info, 3, func([]byte) []byte { return nil })
			}, 3},
			{"truncated chunk", None, func(t *testing.T, key Key, info Info) {
				setChunk(t, key, info, 2, func(d []byte) []byte { return d[:len(d)-1] })
			}, 0},
			{"longer chunk", Gzip, func(t *testing.T, key Key, info Info) {
				setChunk(t, key, info, info.Chunks, func(d []byte) []byte { return append(d, 0) })
			}, 0},
			{"longer chunk zstd", Zstd, func(t *testing.T, key Key, info Info) {
				setChunk(t, key, info, info.Chunks, func(d []byte) []byte { return append(d, 0) })
			}, 0},
			{"inline byte", None, func(t *testing.T, key Key, info Info) {
				_, err := e.c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &e.parents, Key: key.item(),
					UpdateExpression:          aws.String("SET ChunkData = :d"),
					ExpressionAttributeValues: map[string]types.AttributeValue{":d": &types.AttributeValueMemberB{Value: []byte("x")}}})
				if err != nil {
					t.Fatal(err)
				}
			}, 0},
		}
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				st := e.store(t, func(o *Options) { o.ChunkSize = 1000; o.Compression = tt.comp; o.MaxCompressRatio = -1 })
				key := sKey(fmt.Sprint("c", i))
				n := 4500
				if tt.name == "inline byte" {
					n = 1
				}
				data := payload(n, uint64(i), false)
				info, err := st.Put(ctx, key, data)
				if err != nil {
					t.Fatal(err)
				}
				tt.damage(t, key, info)
				got, _, err := st.Get(ctx, key)
				var ce *CorruptError
				if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) || got != nil {
					t.Fatalf("get: %d bytes, %v; want a *CorruptError", len(got), err)
				}
				if ce.Seq != tt.wantSeq || ce.Version != info.Version {
					t.Errorf("corrupt error %+v: want seq %d of version %s", ce, tt.wantSeq, info.Version)
				}
				r, err := st.Open(ctx, key)
				if err != nil {
					t.Fatal(err)
				}
				_, err = io.Copy(io.Discard, r)
				if !errors.As(err, &ce) {
					t.Errorf("reader: got %v, want a *CorruptError", err)
				}
			})
		}
	})
}

// TestDamagedParent damages a parent item so that it claims a 1 GiB
// payload. Sizes that contradict each other or the chunk count are a
// *CorruptError before any chunk is read; a parent consistent in itself
// fails on its missing chunks. Either way Get allocates a small fraction
// of the claimed size.
func TestDamagedParent(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv)
		c, oc := e.countingClient()
		ctx := context.Background()
		const claim = 1 << 30
		num := func(x int64) types.AttributeValue {
			return &types.AttributeValueMemberN{Value: strconv.FormatInt(x, 10)}
		}
		tests := []struct {
			name        string
			comp        Compression
			set         map[string]types.AttributeValue
			readsChunks bool
		}{
			{"size differs from the stored size", None, map[string]types.AttributeValue{attrSize: num(claim)}, false},
			{"more stored bytes than the chunks hold", None,
				map[string]types.AttributeValue{attrSize: num(claim), attrStored: num(claim)}, false},
			{"more than gzip can inflate", Gzip, map[string]types.AttributeValue{attrSize: num(claim)}, false},
			{"consistent, chunks missing", None, map[string]types.AttributeValue{
				attrSize: num(claim), attrStored: num(claim), attrCount: num(claim/DefaultChunkSize + 1), attrChunk: num(DefaultChunkSize)}, true},
			{"chunk size too small for the stored size", None, map[string]types.AttributeValue{
				attrSize: num(claim), attrStored: num(claim), attrCount: num(claim/DefaultChunkSize + 1)}, false},
			{"chunk size too large for the chunk count", None, map[string]types.AttributeValue{attrChunk: num(1500)}, false},
			{"chunk size zero", None, map[string]types.AttributeValue{attrChunk: num(0)}, false},
		}
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				st := newStore(t, c, e.parents, e.chunks, func(o *Options) { o.ChunkSize = 1000; o.Compression = tt.comp })
				key := sKey(fmt.Sprint("damaged", i))
				info, err := st.Put(ctx, key, payload(3000, uint64(i), tt.comp == Gzip))
				if err != nil {
					t.Fatal(err)
				}
				var sets []string
				values := map[string]types.AttributeValue{}
				for name, v := range tt.set {
					sets = append(sets, name+" = :"+name)
					values[":"+name] = v
				}
				if _, err := e.c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &e.parents, Key: key.item(),
					UpdateExpression: aws.String("SET " + strings.Join(sets, ", ")), ExpressionAttributeValues: values}); err != nil {
					t.Fatal(err)
				}
				oc.reset()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				got, _, err := st.Get(ctx, key)
				runtime.ReadMemStats(&after)
				var ce *CorruptError
				if !errors.As(err, &ce) || got != nil {
					t.Fatalf("got %d bytes, %v; want a *CorruptError", len(got), err)
				}
				if ce.Version != info.Version {
					t.Errorf("corrupt error of version %s, want %s", ce.Version, info.Version)
				}
				if n := after.TotalAlloc - before.TotalAlloc; n > claim/16 {
					t.Errorf("Get allocated %d MiB for a parent claiming %d MiB", n>>20, claim>>20)
				}
				if n := oc.count("BatchGetItem"); (n > 0) != tt.readsChunks {
					t.Errorf("%d BatchGetItem requests, want some: %v", n, tt.readsChunks)
				}
			})
		}
	})
}
