package shard_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/shard"
)

// idMoving returns the k-th id whose Hash suffix differs between counts a
// and b.
func idMoving(a, b, k int) string {
	for i := 0; ; i++ {
		id := fmt.Sprint("m", i)
		if shard.Hash(a).Pick(id) != shard.Hash(b).Pick(id) {
			if k == 0 {
				return id
			}
			k--
		}
	}
}

// fixedStrategy is a user strategy that is not Resizable.
type fixedStrategy struct{}

func (fixedStrategy) N() int          { return 4 }
func (fixedStrategy) Pick(string) int { return 1 }

// TestReshardErrors: bad input fails with ErrInvalid before any request;
// a count already in the history but not its last, with ErrConflict.
func TestReshardErrors(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c, sent := countingClient(s)
		name := s.Table(t, "pk:S", "sk:S")
		l := layoutOf(name, shard.Hash(4))
		unchecked := l
		unchecked.Unchecked = true
		fixed := layoutOf(name, fixedStrategy{})
		for _, tc := range []struct {
			name string
			l    shard.Layout
			base string
			n    int
		}{
			{"n = 0", l, "d", 0},
			{"n above MaxN", l, "d", shard.MaxN + 1},
			{"Unchecked", unchecked, "d", 8},
			{"not Resizable", fixed, "d", 8},
			{"empty base", l, "", 8},
			{"invalid layout", shard.Layout{}, "d", 8},
		} {
			if _, err := tc.l.Reshard(ctx, c, tc.base, tc.n); !errors.Is(err, shard.ErrInvalid) {
				t.Errorf("%s: %v, want ErrInvalid", tc.name, err)
			}
		}
		if n := sent.Load(); n != 0 {
			t.Errorf("invalid Reshards sent %d requests, want 0", n)
		}
		// A base never written gets a record with the history [n].
		if h, err := l.Reshard(ctx, c, "planned", 32); err != nil || !slices.Equal(h, []int{32}) {
			t.Errorf("Reshard of a new base: %v, %v, want [32]", h, err)
		}
		if h, err := l.Reshard(ctx, c, "planned", 32); err != nil || !slices.Equal(h, []int{32}) {
			t.Errorf("Reshard to the newest count again: %v, %v, want [32]", h, err)
		}
		if _, err := l.Reshard(ctx, c, "planned", 64); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Reshard(ctx, c, "planned", 32); !errors.Is(err, shard.ErrConflict) {
			t.Errorf("Reshard back to an older count: %v, want ErrConflict", err)
		}
		if h, err := layoutOf(name, shard.Hash(7)).Shards(ctx, s.Client(), "planned"); err != nil || !slices.Equal(h, []int{32, 64}) {
			t.Errorf("history read by another client: %v, %v, want [32 64]", h, err)
		}
	})
}

// TestReshardRace: Reshards racing from separate clients all succeed and
// agree: the history holds each count once, in the order they won.
func TestReshardRace(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		name := s.Table(t, "pk:S", "sk:S")
		l := layoutOf(name, shard.Hash(4))
		if err := l.Record(ctx, s.Client(), "day"); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		counts := []int{8, 8, 16, 16, 8, 16}
		errs := make([]error, len(counts))
		for i, n := range counts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = l.Reshard(ctx, s.Client(), "day", n)
			}()
		}
		wg.Wait()
		h, err := l.Shards(ctx, s.Client(), "day")
		if err != nil {
			t.Fatal(err)
		}
		if len(h) > 3 || h[0] != 4 || !slices.Contains(h, 8) && !slices.Contains(h, 16) {
			t.Errorf("history %v, want 4 then 8 and/or 16, each once", h)
		}
		for i, err := range errs {
			// A count that lost to the other and came second is a
			// conflict only if it is already in the history.
			if err != nil && !(errors.Is(err, shard.ErrConflict) && slices.Contains(h, counts[i])) {
				t.Errorf("Reshard %d: %v", counts[i], err)
			}
		}
	})
}

// TestReshardWrites: after a Reshard, every write applies where the item
// is (one copy, never a second); Get returns it; Update updates an item
// still at its older key in place; Delete removes it; a conditional Put
// and Delete test the item where it stands.
func TestReshardWrites(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c := s.Client()
		name := s.Table(t, "pk:S", "sk:S")
		tbl := newOrders(t, c, name, shard.Hash(4))
		a, b, d := idMoving(4, 8, 0), idMoving(4, 8, 1), idMoving(4, 8, 2)
		for _, id := range []string{a, b, d} {
			if err := tbl.Put(ctx, "day", Order{ID: id, Amount: 1, Note: "old"}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := tbl.Reshard(ctx, "day", 8); err != nil {
			t.Fatal(err)
		}
		at := func(id string, n int) string { return fmt.Sprintf("day.%d", shard.Hash(n).Pick(id)) }
		// Put: in place at the old key, no second copy; Get returns it.
		if err := tbl.Put(ctx, "day", Order{ID: a, Amount: 2}); err != nil {
			t.Fatal(err)
		}
		if got, err := tbl.Get(ctx, "day", a); err != nil || got.Amount != 2 {
			t.Errorf("Get after Put: %+v, %v, want amount 2", got, err)
		}
		if rawGet(t, c, name, at(a, 4), a) == nil || rawGet(t, c, name, at(a, 8), a) != nil {
			t.Errorf("Put of %s did not write in place at %s", a, at(a, 4))
		}
		// Delete: every copy.
		if err := tbl.Delete(ctx, "day", a); err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{4, 8} {
			if it := rawGet(t, c, name, at(a, n), a); it != nil {
				t.Errorf("Delete left %s at %s", a, at(a, n))
			}
		}
		// Update: in place, old fields kept.
		got, err := tbl.Update(ctx, "day", b, expression.Set(expression.Name("amount"), expression.Value(5)))
		if err != nil || got.Amount != 5 || got.Note != "old" {
			t.Errorf("Update: %+v, %v, want amount 5 and note old", got, err)
		}
		if rawGet(t, c, name, at(b, 4), b) == nil || rawGet(t, c, name, at(b, 8), b) != nil {
			t.Errorf("Update of %s did not apply in place at %s", b, at(b, 4))
		}
		// A conditional Put tests the item as it stands (at the old key).
		cond := func(o *shard.Options) { o.Condition = expression.Name("note").Equal(expression.Value("old")) }
		if err := tbl.Put(ctx, "day", Order{ID: d, Amount: 9, Note: "new"}, cond); err != nil {
			t.Errorf("conditional Put of an item at its old key: %v", err)
		}
		if err := tbl.Put(ctx, "day", Order{ID: d, Amount: 10}, cond); !errors.Is(err, shard.ErrConflict) {
			t.Errorf("conditional Put whose condition fails: %v, want ErrConflict", err)
		}
		if err := tbl.Delete(ctx, "day", d, func(o *shard.Options) {
			o.Condition = expression.Name("note").Equal(expression.Value("new"))
		}); err != nil {
			t.Errorf("conditional Delete: %v", err)
		}
		if _, err := tbl.Get(ctx, "day", d); !errors.Is(err, shard.ErrNotFound) {
			t.Errorf("Get after the conditional Delete: %v, want ErrNotFound", err)
		}
	})
}

// TestReshardLoad: Load writes each base at its own newest count.
func TestReshardLoad(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		name := s.Table(t, "pk:S", "sk:S")
		tbl := newOrders(t, s.Client(), name, shard.Hash(4))
		if _, err := tbl.Reshard(ctx, "big", 16); err != nil {
			t.Fatal(err)
		}
		var in []pair
		for i := range 40 {
			in = append(in, pair{"big", Order{ID: fmt.Sprint("b", i)}}, pair{"small", Order{ID: fmt.Sprint("s", i)}})
		}
		if _, err := tbl.Load(ctx, seq2(in)); err != nil {
			t.Fatal(err)
		}
		got := scanAll(t, s.Client(), name)
		for _, p := range in {
			n := map[string]int{"big": 16, "small": 4}[p.base]
			pk := shard.Key(p.base, shard.Hash(n).Pick(p.item.ID))
			if _, ok := got[pk+"/"+p.item.ID]; !ok {
				t.Errorf("%s/%s not at %s (N=%d)", p.base, p.item.ID, pk, n)
			}
		}
		if len(got) != len(in) {
			t.Errorf("%d items stored, want %d", len(got), len(in))
		}
	})
}
