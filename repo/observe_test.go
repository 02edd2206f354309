package repo_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/chunk"
	"github.com/dynashard/dynashard/internal/ddbsize"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/repo"
	"github.com/dynashard/dynashard/shard"
)

// Capacity as DynamoDB charges it: a write unit per started KB of the
// item written (the larger of before and after), an eventually consistent
// read half a unit per started 4 KB of the item read (a strongly
// consistent one twice that; an absent item is charged as the smallest),
// and a Query half a unit per started 4 KB of all the items it read
// together. The sizes are the stored items', read back by the test and
// sized by internal/ddbsize.

func writeUnits(n int) float64      { return float64((n + 1023) / 1024) }
func readUnits(n int) float64       { return float64((n+4095)/4096) / 2 }
func consistentUnits(n int) float64 { return 2 * readUnits(n) }

// absentRead is a strongly consistent read of no item.
var absentRead = consistentUnits(1)

// stored is the sizes of a table's items: the layout record's (one base)
// and the others' by their sort-key value.
type stored struct {
	record int
	items  map[string]int
}

// sizes scans table with c, consistently, and sizes what it holds.
func sizes(t *testing.T, c *dynamodb.Client, table, sortKey string) stored {
	t.Helper()
	s := stored{items: map[string]int{}}
	out, err := c.Scan(context.Background(), &dynamodb.ScanInput{TableName: &table, ConsistentRead: aws.Bool(true)})
	if err != nil || out.LastEvaluatedKey != nil {
		t.Fatalf("Scan %s: %v (more than a page: %v)", table, err, out != nil && out.LastEvaluatedKey != nil)
	}
	for _, it := range out.Items {
		n, err := ddbsize.ItemSize(it)
		if err != nil {
			t.Fatal(err)
		}
		if shard.IsRecord(it) {
			s.record = n
			continue
		}
		id := "?"
		if sk, ok := it[sortKey].(*types.AttributeValueMemberS); ok {
			id = sk.Value
		}
		s.items[id] = n
	}
	return s
}

type cost struct {
	tables   map[string]dynashard.Capacity
	requests int64
}

// measure runs call with a Usage in its context, expecting its error to
// match wantErr (nil: none), and compares what the Usage reports.
func measure(t *testing.T, what string, wantErr error, want cost, call func(ctx context.Context) error) {
	t.Helper()
	var u dynashard.Usage
	if err := call(dynashard.WithUsage(context.Background(), &u)); !errors.Is(err, wantErr) || (wantErr == nil) != (err == nil) {
		t.Fatalf("%s: %v, want %v", what, err, wantErr)
	}
	check(t, what, &u, want)
}

// check compares what u reports with want.
func check(t *testing.T, what string, u *dynashard.Usage, want cost) {
	t.Helper()
	t.Logf("%s: %v, %d requests", what, u.Tables(), u.Requests())
	if want.tables == nil {
		want.tables = map[string]dynashard.Capacity{}
	}
	if diff := cmp.Diff(want.tables, u.Tables()); diff != "" {
		t.Errorf("%s: capacity per table (-want +got):\n%s", what, diff)
	}
	if got := u.Requests(); got != want.requests {
		t.Errorf("%s: Requests() = %d, want %d", what, got, want.requests)
	}
}

// TestUsage runs every entry point of a Repo with a dynashard.Usage and
// checks the exact capacity the server reports, from the sizes of the
// items stored, and the requests sent. One shard (Hash(1)): every item has
// one key. The layout record is read and written by the base's first
// Put, and then read from shard's cache (HistoryTTL an hour: cachedTable).
func TestUsage(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		c := s.Client()
		l := cachedTable(t, s, 1)
		T := l.Table
		r := newRepo[Reply](t, c, l)
		a := Reply{ID: "a", Author: "ann", Body: make([]byte, 2500)}
		put := func(v Reply) func(context.Context) error {
			return func(ctx context.Context) error { _, err := r.Put(ctx, "b", v); return err }
		}
		// The first Put of base b: the record read (absent) and written,
		// then the item.
		var u dynashard.Usage
		if _, err := r.Put(dynashard.WithUsage(context.Background(), &u), "b", a); err != nil {
			t.Fatal(err)
		}
		st := sizes(t, c, T, l.SortKey)
		if st.record == 0 || len(st.items) != 1 {
			t.Fatalf("stored: %+v, want the record and one item", st)
		}
		check(t, "first Put", &u, cost{map[string]dynashard.Capacity{
			T: {Read: absentRead, Write: writeUnits(st.record) + writeUnits(st.items["a"])},
		}, 3})
		measure(t, "Put again", nil, cost{map[string]dynashard.Capacity{T: {Write: writeUnits(st.items["a"])}}, 1}, put(a))
		// A Create of an id that exists fails its condition: one request,
		// and no capacity reported (DynamoDB charges the write, but an
		// error carries no ConsumedCapacity).
		measure(t, "Create existing", repo.ErrConflict, cost{nil, 1}, func(ctx context.Context) error {
			_, err := r.Create(ctx, "b", a)
			return err
		})
		bItem := Reply{ID: "b", Author: "bob", Body: make([]byte, 5000)}
		u.Reset()
		if _, err := r.Create(dynashard.WithUsage(context.Background(), &u), "b", bItem); err != nil {
			t.Fatal(err)
		}
		st = sizes(t, c, T, l.SortKey)
		check(t, "Create", &u, cost{map[string]dynashard.Capacity{T: {Write: writeUnits(st.items["b"])}}, 1})
		get := func(id string, optFns ...func(*repo.Options)) func(context.Context) error {
			return func(ctx context.Context) error { _, err := r.Get(ctx, "b", id, optFns...); return err }
		}
		measure(t, "Get", nil, cost{map[string]dynashard.Capacity{T: {Read: readUnits(st.items["b"])}}, 1}, get("b"))
		// A consistent Get reads the item consistently, at the keys of the
		// base's cached history (no record read: see shard's placed.go).
		measure(t, "Get consistent", nil, cost{map[string]dynashard.Capacity{T: {Read: consistentUnits(st.items["b"])}}, 1},
			get("b", func(o *repo.Options) { o.ConsistentRead = true }))
		measure(t, "Get absent", repo.ErrNotFound, cost{map[string]dynashard.Capacity{T: {Read: readUnits(1)}}, 1}, get("none"))
		// List, All and Count: one Query of the one shard, charged by the
		// two items' bytes together.
		query := cost{map[string]dynashard.Capacity{T: {Read: readUnits(st.items["a"] + st.items["b"])}}, 1}
		measure(t, "List", nil, query, func(ctx context.Context) error {
			items, _, err := r.List(ctx, "b", 10, "")
			if err == nil && len(items) != 2 {
				t.Errorf("List: %d items, want 2", len(items))
			}
			return err
		})
		measure(t, "All", nil, query, func(ctx context.Context) error {
			for _, err := range r.All(ctx, "b") {
				if err != nil {
					return err
				}
			}
			return nil
		})
		measure(t, "Count", nil, query, func(ctx context.Context) error {
			_, err := r.Count(ctx, "b")
			return err
		})
		measure(t, "Delete", nil, cost{map[string]dynashard.Capacity{T: {Write: writeUnits(st.items["b"])}}, 1}, func(ctx context.Context) error {
			return r.Delete(ctx, "b", "b")
		})
	})
}

// TestUsageLarge: with a LargeField the item is the chunk store's parent,
// read, switched and deleted through shard's placement, and its value's
// chunks live in the chunk table.
func TestUsageLarge(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		c := s.Client()
		l := cachedTable(t, s, 1)
		// 3,000-byte chunks: a 7,000-byte body is three chunk items.
		st := newStore(t, s, c, l, func(o *chunk.Options) { o.ChunkSize = 3000 })
		r := newRepo[Reply](t, c, l, large("body", st))
		T, C := l.Table, chunkTable(t, st)
		v := Reply{ID: "big", Author: "ann", Body: make([]byte, 7000)}
		// The first Put of the base records it (the record read, absent,
		// and written), then the store reads the item consistently
		// (absent), writes the chunks in one BatchWriteItem and creates
		// the item with its flip.
		var u dynashard.Usage
		if _, err := r.Put(dynashard.WithUsage(context.Background(), &u), "b", v); err != nil {
			t.Fatal(err)
		}
		items := sizes(t, c, T, l.SortKey)
		if items.record == 0 || len(items.items) != 1 {
			t.Fatalf("stored: %+v, want the record and one item", items)
		}
		chunkSizes := chunkItemSizes(t, c, C)
		if len(chunkSizes) != 3 {
			t.Fatalf("%d chunk items, want 3", len(chunkSizes))
		}
		var chunkWrites, chunkReads float64
		for _, n := range chunkSizes {
			chunkWrites += writeUnits(n)
			chunkReads += readUnits(n)
		}
		item := items.items["big"]
		check(t, "large Put", &u, cost{map[string]dynashard.Capacity{
			T: {Read: 2 * absentRead, Write: writeUnits(items.record) + writeUnits(item)},
			C: {Write: chunkWrites},
		}, 5})
		// Get: the item read eventually consistently, its chunks in one
		// BatchGetItem.
		measure(t, "large Get", nil, cost{map[string]dynashard.Capacity{
			T: {Read: readUnits(item)}, C: {Read: chunkReads},
		}, 2}, func(ctx context.Context) error {
			got, err := r.Get(ctx, "b", "big")
			if err == nil && len(got.Body) != len(v.Body) {
				t.Errorf("Get: %d bytes, want %d", len(got.Body), len(v.Body))
			}
			return err
		})
		// List: the Query returns the item with its chunk pointers, then
		// the chunks are read as Get reads them.
		measure(t, "large List", nil, cost{map[string]dynashard.Capacity{
			T: {Read: readUnits(item)}, C: {Read: chunkReads},
		}, 2}, func(ctx context.Context) error {
			_, _, err := r.List(ctx, "b", 10, "")
			return err
		})
		// SkipLarge: the Query alone.
		measure(t, "List SkipLarge", nil, cost{map[string]dynashard.Capacity{T: {Read: readUnits(item)}}, 1}, func(ctx context.Context) error {
			_, _, err := r.List(ctx, "b", 10, "", func(o *repo.Options) { o.SkipLarge = true })
			return err
		})
		// Delete: the item read consistently, deleted, then its chunks.
		measure(t, "large Delete", nil, cost{map[string]dynashard.Capacity{
			T: {Read: consistentUnits(item), Write: writeUnits(item)}, C: {Write: chunkWrites},
		}, 3}, func(ctx context.Context) error { return r.Delete(ctx, "b", "big") })
	})
}

// chunkTable returns the name of st's chunk table, from the input
// ChunkTableInput builds.
func chunkTable(t *testing.T, st *chunk.Store) string {
	t.Helper()
	in, err := st.ChunkTableInput()
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(in.TableName)
}

// chunkItemSizes sizes every item of chunk table table.
func chunkItemSizes(t *testing.T, c *dynamodb.Client, table string) []int {
	t.Helper()
	out, err := c.Scan(context.Background(), &dynamodb.ScanInput{TableName: &table, ConsistentRead: aws.Bool(true)})
	if err != nil || out.LastEvaluatedKey != nil {
		t.Fatalf("Scan %s: %v", table, err)
	}
	var sizes []int
	for _, it := range out.Items {
		n, err := ddbsize.ItemSize(it)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, n)
	}
	return sizes
}
