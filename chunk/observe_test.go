package chunk

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/internal/ddbsize"
	"github.com/dynashard/dynashard/internal/ddbtest"
)

// Capacity as DynamoDB charges it, per item: a write unit per started KB
// written (writeUnits, cost.go), an eventually consistent read half a unit
// per started 4 KB read (readUnits), a strongly consistent one twice that.
// A read that finds no item is charged as one of the smallest item, a
// write as the larger of the item before and after. Both local servers
// report these figures for every request the store sends (DynamoDB Local
// and dynalite differ only where the store never goes: a BatchGetItem key
// that finds nothing, a BatchWriteItem delete of nothing).

// consistentUnits is a strongly consistent read of an item of n bytes.
func consistentUnits(n int) float64 { return 2 * readUnits(n) }

// absentRead is what a strongly consistent read of an absent item costs:
// the smallest item's read.
var absentRead = consistentUnits(1)

func sumWrites(sizes []int) float64 {
	var u float64
	for _, n := range sizes {
		u += float64(writeUnits(n))
	}
	return u
}

func sumReads(sizes []int) float64 {
	var u float64
	for _, n := range sizes {
		u += readUnits(n)
	}
	return u
}

// chunkSizes returns the sizes of the chunk items Put writes for data
// under key as version, by the store's own cutting (payloadOf, the source
// Put reads) and its own chunk items (chunkItem), sized by internal/ddbsize.
func chunkSizes(t *testing.T, st *Store, key Key, version string, data []byte) []int {
	t.Helper()
	prefix, err := st.keyPrefix(key)
	if err != nil {
		t.Fatal(err)
	}
	parentKey, _, err := st.chunkTemplate(key, prefix)
	if err != nil {
		t.Fatal(err)
	}
	src := st.payloadOf(newBytesSource(data, st.opts))
	var sizes []int
	for seq := 1; ; seq++ {
		c, err := src.next()
		if err == io.EOF {
			return sizes
		}
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, itemSize(t, st.chunkItem(parentKey, chunkKey(prefix, version, seq), c)))
	}
}

func itemSize(t *testing.T, item map[string]types.AttributeValue) int {
	t.Helper()
	n, err := ddbsize.ItemSize(item)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// parentSize reads key's parent item back with the test's own client and
// returns its size; 0 for none.
func (e *env) parentSize(t *testing.T, key Key) int {
	t.Helper()
	out, err := e.c.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: &e.parents, Key: key.item(), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if out.Item == nil {
		return 0
	}
	return itemSize(t, out.Item)
}

// cost is what a call should report: units per table and requests sent.
type cost struct {
	tables   map[string]dynashard.Capacity
	requests int64
}

// measure runs call with a Usage in its context and compares what it
// reports with want.
func measure(t *testing.T, what string, want cost, call func(ctx context.Context) error) {
	t.Helper()
	var u dynashard.Usage
	if err := call(dynashard.WithUsage(context.Background(), &u)); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	checkUsage(t, what, &u, want)
}

// checkUsage compares what u reports with want.
func checkUsage(t *testing.T, what string, u *dynashard.Usage, want cost) {
	t.Helper()
	t.Logf("%s: %v, %d requests", what, u.Tables(), u.Requests())
	if diff := cmp.Diff(want.tables, u.Tables()); diff != "" {
		t.Errorf("%s: capacity per table (-want +got):\n%s", what, diff)
	}
	var total dynashard.Capacity
	for _, c := range want.tables {
		total.Read += c.Read
		total.Write += c.Write
	}
	if got := u.Total(); got != total {
		t.Errorf("%s: Total() = %+v, want %+v", what, got, total)
	}
	if got := u.Requests(); got != want.requests {
		t.Errorf("%s: Requests() = %d, want %d", what, got, want.requests)
	}
	if got := u.Throttled() + u.Unprocessed(); got != 0 {
		t.Errorf("%s: %d throttled attempts and unprocessed entries, want none", what, got)
	}
}

// TestUsage runs every entry point of a Store with a dynashard.Usage and
// checks the exact capacity the server reports, per table, computed from
// the sizes of the items the store writes and reads, and the requests
// sent.
func TestUsage(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv)
		// 3,000-byte chunks: a 7,000-byte payload is three chunk items
		// of 3,000, 3,000 and 1,000 bytes and their key attributes.
		st := e.store(t, func(o *Options) { o.ChunkSize = 3000 })
		P, C := e.parents, e.chunks
		key := sKey("usage")
		data := payload(7000, 1, false)
		var info Info
		// A first Put: the parent is read consistently (absent), the
		// chunks written in one BatchWriteItem, the parent created by the
		// flip (an UpdateItem of no item before).
		var parent int
		var chunks []int
		t.Run("Put", func(t *testing.T) {
			var err error
			var u dynashard.Usage
			info, err = st.Put(dynashard.WithUsage(context.Background(), &u), key, data)
			if err != nil {
				t.Fatal(err)
			}
			parent, chunks = e.parentSize(t, key), chunkSizes(t, st, key, info.Version, data)
			if len(chunks) != 3 || info.Chunks != 3 {
				t.Fatalf("%d chunk items (Info.Chunks %d), want 3", len(chunks), info.Chunks)
			}
			checkUsage(t, "Put", &u, cost{map[string]dynashard.Capacity{
				P: {Read: absentRead, Write: float64(writeUnits(parent))},
				C: {Write: sumWrites(chunks)},
			}, 3})
		})
		// Get reads the parent eventually consistently, then the chunks
		// in one BatchGetItem, eventually consistent too: chunk items are
		// never changed, and one that is missing is read again
		// consistently (it is not here).
		reads := cost{map[string]dynashard.Capacity{P: {Read: readUnits(parent)}, C: {Read: sumReads(chunks)}}, 2}
		measure(t, "Get", reads, func(ctx context.Context) error {
			_, _, err := st.Get(ctx, key)
			return err
		})
		// With ConsistentRead only the parent's read doubles.
		measure(t, "Get consistent", cost{map[string]dynashard.Capacity{P: {Read: consistentUnits(parent)}, C: {Read: sumReads(chunks)}}, 2},
			func(ctx context.Context) error {
				_, _, err := st.Get(ctx, key, func(o *Options) { o.ConsistentRead = true })
				return err
			})
		measure(t, "Open and Read", reads, func(ctx context.Context) error {
			r, err := st.Open(ctx, key)
			if err != nil {
				return err
			}
			defer r.Close()
			_, err = io.ReadAll(r)
			return err
		})
		measure(t, "Stat", cost{map[string]dynashard.Capacity{P: {Read: readUnits(parent)}}, 1}, func(ctx context.Context) error {
			_, err := st.Stat(ctx, key)
			return err
		})
		out, err := e.c.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: &P, Key: key.item(), ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		measure(t, "Resolve", cost{map[string]dynashard.Capacity{C: {Read: sumReads(chunks)}}, 1}, func(ctx context.Context) error {
			_, _, err := st.Resolve(ctx, key, out.Item)
			return err
		})

		// A Put that replaces the payload: the old parent read
		// consistently, the new chunks written, the flip charged by the
		// larger parent, then the old chunks deleted (a delete is charged
		// by the item it deletes): two BatchWriteItems.
		data2 := payload(4000, 2, false)
		t.Run("Put replacing", func(t *testing.T) {
			var u dynashard.Usage
			info2, err := st.Put(dynashard.WithUsage(context.Background(), &u), key, data2)
			if err != nil {
				t.Fatal(err)
			}
			parent2, chunks2 := e.parentSize(t, key), chunkSizes(t, st, key, info2.Version, data2)
			checkUsage(t, "Put replacing", &u, cost{map[string]dynashard.Capacity{
				P: {Read: consistentUnits(parent), Write: float64(writeUnits(max(parent, parent2)))},
				C: {Write: sumWrites(chunks2) + sumWrites(chunks)},
			}, 4})
			parent, chunks = parent2, chunks2
		})

		// Delete: the parent read consistently, deleted, then its chunks.
		measure(t, "Delete", cost{map[string]dynashard.Capacity{
			P: {Read: consistentUnits(parent), Write: float64(writeUnits(parent))},
			C: {Write: sumWrites(chunks)},
		}, 3}, func(ctx context.Context) error { return st.Delete(ctx, key) })
		// Deleting what is not there: one consistent read of nothing.
		measure(t, "Delete absent", cost{map[string]dynashard.Capacity{P: {Read: absentRead}}, 1},
			func(ctx context.Context) error { return st.Delete(ctx, key) })

		// A payload kept inline: no chunk table at all.
		small := sKey("small")
		t.Run("Put inline", func(t *testing.T) {
			var u dynashard.Usage
			if _, err := st.Put(dynashard.WithUsage(context.Background(), &u), small, []byte("short")); err != nil {
				t.Fatal(err)
			}
			checkUsage(t, "Put inline", &u, cost{map[string]dynashard.Capacity{
				P: {Read: absentRead, Write: float64(writeUnits(e.parentSize(t, small)))},
			}, 2})
		})
		// PutReader of the first payload under a new key costs what Put
		// does.
		t.Run("PutReader", func(t *testing.T) {
			var u dynashard.Usage
			k := sKey("reader")
			info, err := st.PutReader(dynashard.WithUsage(context.Background(), &u), k, noLen{bytes.NewReader(data)})
			if err != nil {
				t.Fatal(err)
			}
			checkUsage(t, "PutReader", &u, cost{map[string]dynashard.Capacity{
				P: {Read: absentRead, Write: float64(writeUnits(e.parentSize(t, k)))},
				C: {Write: sumWrites(chunkSizes(t, st, k, info.Version, data))},
			}, 3})
		})
	})
}

// TestUsageSweep: a Sweep past Grace scans the chunk table (one page,
// charged as one eventually consistent read of all the items' bytes
// together, rounded up to 4 KB once, as DynamoDB charges a Scan), reads
// the parent once, consistently, and deletes the orphaned version's
// chunks.
func TestUsageSweep(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv)
		st := e.store(t, func(o *Options) { o.ChunkSize, o.RetainOld = 3000, true })
		key := sKey("swept")
		ctx := context.Background()
		var sizes [][]int // per version, the first orphaned
		var stored int
		for i, n := range []int{7000, 5000} {
			data := payload(n, uint64(i), false)
			info, err := st.Put(ctx, key, data)
			if err != nil {
				t.Fatal(err)
			}
			s := chunkSizes(t, st, key, info.Version, data)
			sizes = append(sizes, s)
			for _, n := range s {
				stored += n
			}
		}
		sweeper := e.store(t, func(o *Options) { o.ChunkSize = 3000 })
		sweeper.now = later(sweeper)
		var stats SweepStats
		measure(t, "Sweep", cost{map[string]dynashard.Capacity{
			e.parents: {Read: consistentUnits(e.parentSize(t, key))},
			e.chunks:  {Read: readUnits(stored), Write: sumWrites(sizes[0])},
		}, 3}, func(ctx context.Context) (err error) {
			stats, err = sweeper.Sweep(ctx)
			return err
		})
		if stats.Scanned != 5 || stats.Deleted != 3 || stats.Parents != 1 {
			t.Errorf("Sweep: %+v, want 5 scanned, 3 deleted, 1 parent read", stats)
		}
	})
}

// TestUsageGuide: a Put in the guide's layout also reserves its version
// with an UpdateItem of the counter item in the chunk table, and Migrate
// without Options.Guide is the consistent Get that finds nothing to
// migrate.
func TestUsageGuide(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		e := &env{srv: srv, c: srv.Client(), parents: srv.Table(t, "pk:S"), chunks: srv.Table(t, "Id:S")}
		st := e.store(t, GuideLayout, func(o *Options) { o.ChunkSize = 3000 })
		key := sKey("guide")
		data := bytes.Repeat([]byte("guide text "), 700) // 7,700 bytes of ASCII: three S chunks
		var u dynashard.Usage
		info, err := st.Put(dynashard.WithUsage(context.Background(), &u), key, data)
		if err != nil {
			t.Fatal(err)
		}
		chunks := chunkSizes(t, st, key, info.Version, data)
		prefix, _ := key.prefix()
		counter := itemSize(t, map[string]types.AttributeValue{
			GuideChunkKeyAttribute: &types.AttributeValueMemberS{Value: prefix + "#" + attrVersion},
			attrVersion:            number(1), // the first version reserved
		})
		parent := e.parentSize(t, key)
		checkUsage(t, "guide Put", &u, cost{map[string]dynashard.Capacity{
			e.parents: {Read: absentRead, Write: float64(writeUnits(parent))},
			e.chunks:  {Write: float64(writeUnits(counter)) + sumWrites(chunks)},
		}, 4})

		own := newEnv(t, srv)
		plain := own.store(t, func(o *Options) { o.ChunkSize = 3000 })
		k := sKey("plain")
		info, err = plain.Put(context.Background(), k, data)
		if err != nil {
			t.Fatal(err)
		}
		measure(t, "Migrate", cost{map[string]dynashard.Capacity{
			own.parents: {Read: consistentUnits(own.parentSize(t, k))},
			own.chunks:  {Read: sumReads(chunkSizes(t, plain, k, info.Version, data))},
		}, 2}, func(ctx context.Context) error {
			_, err := plain.Migrate(ctx, k)
			return err
		})
	})
}
