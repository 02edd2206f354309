package repo_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/repo"
	"github.com/dynashard/dynashard/shard"
)

// TestUnversionedItems: an item written without the version attribute
// (bulk-loaded by shard.Table.Load, say) reads with version 0, and a
// versioned Repo's Put of that value writes version 1, as a first Put
// would; from then on it is versioned like any other. Create still
// refuses it (it exists); a second Put from version 0 is ErrConflict;
// of writers racing from version 0 exactly one wins. The same holds with
// a LargeField.
func TestUnversionedItems(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		l := newTable(t, s, 4)
		loader, err := shard.NewTable[Order](s.Client(), l)
		if err != nil {
			t.Fatal(err)
		}
		loaded := map[string]Order{"a": {ID: "a", Amount: 1}, "b": {ID: "b", Amount: 2}, "c": {ID: "c", Amount: 3}}
		if _, err := loader.Load(ctx, func(yield func(string, Order) bool) {
			for _, o := range loaded {
				if !yield("d", o) {
					return
				}
			}
		}); err != nil {
			t.Fatal(err)
		}
		r := newRepo[Order](t, s.Client(), l, func(o *repo.Options) { o.Version = "ver" })

		got, err := r.Get(ctx, "d", "a")
		if err != nil || got.Version != 0 {
			t.Fatalf("Get of a loaded item: %+v, %v; want version 0", got, err)
		}
		got.Amount = 10
		v1, err := r.Put(ctx, "d", got)
		if err != nil || v1.Version != 1 {
			t.Fatalf("Put of a loaded item read at version 0: %+v, %v; want version 1", v1, err)
		}
		if _, err := r.Put(ctx, "d", got); !errors.Is(err, repo.ErrConflict) {
			t.Errorf("second Put from version 0: got %v, want ErrConflict", err)
		}
		v1.Amount = 11
		if v2, err := r.Put(ctx, "d", v1); err != nil || v2.Version != 2 {
			t.Errorf("Put from version 1: %+v, %v; want version 2", v2, err)
		}
		if _, err := r.Create(ctx, "d", Order{ID: "b", Amount: 5}); !errors.Is(err, repo.ErrConflict) {
			t.Errorf("Create over a loaded item: got %v, want ErrConflict", err)
		}

		// Racing writers from version 0: exactly one wins.
		var wg sync.WaitGroup
		var mu sync.Mutex
		wins := 0
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := r.Put(ctx, "d", Order{ID: "c", Amount: 100 + i}); err == nil {
					mu.Lock()
					wins++
					mu.Unlock()
				} else if !errors.Is(err, repo.ErrConflict) {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if wins != 1 {
			t.Errorf("%d of 8 writers racing from version 0 won, want exactly 1", wins)
		}
		if got, err := r.Get(ctx, "d", "c"); err != nil || got.Version != 1 {
			t.Errorf("after the race: %+v, %v; want version 1", got, err)
		}
	})
}

// TestUnversionedLargeItem: TestUnversionedItems with a LargeField.
func TestUnversionedLargeItem(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		l := newTable(t, s, 4)
		st := newStore(t, s, s.Client(), l)
		type Doc struct {
			Key  string `dynamodbav:"pk"`
			ID   string `dynamodbav:"sk"`
			Body []byte `dynamodbav:"body"`
			Ver  int64  `dynamodbav:"ver,omitempty"`
		}
		plain := newRepo[Doc](t, s.Client(), l, large("body", st))
		if _, err := plain.Put(ctx, "b", Doc{ID: "d", Body: []byte("unversioned")}); err != nil {
			t.Fatal(err)
		}
		r := newRepo[Doc](t, s.Client(), l, large("body", st), func(o *repo.Options) { o.Version = "ver" })
		got, err := r.Get(ctx, "b", "d")
		if err != nil || got.Ver != 0 {
			t.Fatalf("Get: %+v, %v; want version 0", got, err)
		}
		got.Body = bytes.Repeat([]byte("x"), 5000)
		if d1, err := r.Put(ctx, "b", got); err != nil || d1.Ver != 1 {
			t.Fatalf("Put from version 0: %+v, %v; want version 1", d1.Ver, err)
		}
		if _, err := r.Put(ctx, "b", got); !errors.Is(err, repo.ErrConflict) {
			t.Errorf("second Put from version 0: got %v, want ErrConflict", err)
		}
		if got, err := r.Get(ctx, "b", "d"); err != nil || got.Ver != 1 || len(got.Body) != 5000 {
			t.Errorf("after: ver %d, %d bytes, %v; want version 1, 5000 bytes", got.Ver, len(got.Body), err)
		}
	})
}
