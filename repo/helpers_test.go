package repo_test

import (
	"testing"
	"time"

	"github.com/dynashard/dynashard/chunk"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/exampletest"
	"github.com/dynashard/dynashard/repo"
	"github.com/dynashard/dynashard/shard"
)

func TestMain(m *testing.M) { exampletest.Main(m) }

// layout describes a test table: partition key pk, sort key sk (the id),
// spread over n shards by shard.Hash.
func layout(table string, n int) shard.Layout {
	return shard.Layout{Table: table, PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(n)}
}

// newTable creates a table for layout(…, n) on s and returns its layout.
func newTable(t *testing.T, s *ddbtest.Server, n int) shard.Layout {
	t.Helper()
	return layout(s.Table(t, "pk:S", "sk:S"), n)
}

// cachedTable is newTable with a HistoryTTL of an hour: a test that counts
// requests sees the layout record read once, however slow the machine (at
// the default 10 s a call made later reads it again). Not for Reshard,
// which waits out the fence: two hours.
func cachedTable(t *testing.T, s *ddbtest.Server, n int) shard.Layout {
	t.Helper()
	l := newTable(t, s, n)
	l.HistoryTTL = time.Hour
	return l
}

// newRepo is repo.New, failing t on an error.
func newRepo[T any](t *testing.T, c repo.Client, l shard.Layout, optFns ...func(*repo.Options)) *repo.Repo[T] {
	t.Helper()
	r, err := repo.New[T](c, l, optFns...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// newStore returns a chunk store keeping parents in l's table and chunks
// in a new table of s.
func newStore(t *testing.T, s *ddbtest.Server, c chunk.Client, l shard.Layout, optFns ...func(*chunk.Options)) *chunk.Store {
	t.Helper()
	st, err := chunk.New(c, l.Table, s.Table(t, "ChunkKey:S"), optFns...)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// large is the option that stores attribute attr through st.
func large(attr string, st *chunk.Store) func(*repo.Options) {
	return func(o *repo.Options) { o.Large = &repo.LargeField{Attribute: attr, Store: st} }
}
