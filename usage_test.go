package dynashard_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/shard"
)

// TestUsageNested: a Usage counts each request once, however often the
// contexts it is in nest it: u → v → u and u → v → w → u count one Put
// in u as v (in it once) counts it.
func TestUsageNested(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		bg := context.Background()
		l := shard.Layout{Table: ddbtest.TableName(), PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(4)}
		in, err := l.CreateTableInput()
		if err != nil {
			t.Fatal(err)
		}
		s.CreateTable(t, in)
		tbl, err := shard.NewTable[Order](s.Client(), l)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name  string
			chain func(u, v, w *dynashard.Usage) context.Context
		}{
			{"u v u", func(u, v, _ *dynashard.Usage) context.Context {
				return dynashard.WithUsage(dynashard.WithUsage(dynashard.WithUsage(bg, u), v), u)
			}},
			{"u v w u", func(u, v, w *dynashard.Usage) context.Context {
				return dynashard.WithUsage(dynashard.WithUsage(dynashard.WithUsage(dynashard.WithUsage(bg, u), v), w), u)
			}},
			{"u u", func(u, _, _ *dynashard.Usage) context.Context {
				return dynashard.WithUsage(dynashard.WithUsage(bg, u), u)
			}},
			{"v u v u", func(u, v, _ *dynashard.Usage) context.Context {
				return dynashard.WithUsage(dynashard.WithUsage(dynashard.WithUsage(dynashard.WithUsage(bg, v), u), v), u)
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var u, v, w, once dynashard.Usage
				base := "2014-07-09/" + tc.name // a base never written: its first Put also reads and writes the layout record
				if err := tbl.Put(tc.chain(&u, &v, &w), base, Order{ID: "ORD-1", Amount: 1}); err != nil {
					t.Fatal(err)
				}
				if err := tbl.Put(dynashard.WithUsage(bg, &once), base+"'", Order{ID: "ORD-1", Amount: 1}); err != nil {
					t.Fatal(err)
				}
				want := figures(&once)
				if diff := cmp.Diff(want, figures(&u)); diff != "" {
					t.Errorf("u, nested twice, against a Usage alone (-want +got):\n%s", diff)
				}
				if tc.name != "u u" {
					if diff := cmp.Diff(want, figures(&v)); diff != "" {
						t.Errorf("v against a Usage alone (-want +got):\n%s", diff)
					}
				}
			})
		}
	})
}

// usageFigures is what a Usage reports.
type usageFigures struct {
	Requests, Throttled, Unprocessed int64
	Tables                           map[string]dynashard.Capacity
}

func figures(u *dynashard.Usage) usageFigures {
	return usageFigures{Requests: u.Requests(), Throttled: u.Throttled(), Unprocessed: u.Unprocessed(), Tables: u.Tables()}
}

// TestUsageNil: nothing about a nil Usage or a nil ctx panics. A nil
// *Usage reports nothing and Reset does nothing; WithUsage with a nil u
// or a nil ctx returns ctx as it is (a nil ctx is then refused by the
// call it is given to, with ErrInvalid naming it).
func TestUsageNil(t *testing.T) {
	var u *dynashard.Usage
	calls := map[string]func() any{
		"Total":       func() any { return u.Total() },
		"Table":       func() any { return u.Table("t") },
		"Index":       func() any { return u.Index("t", "i") },
		"Tables":      func() any { return len(u.Tables()) },
		"Requests":    func() any { return u.Requests() },
		"Throttled":   func() any { return u.Throttled() },
		"Unprocessed": func() any { return u.Unprocessed() },
		"Reset":       func() any { u.Reset(); return nil },
	}
	want := map[string]any{"Total": dynashard.Capacity{}, "Table": dynashard.Capacity{}, "Index": dynashard.Capacity{},
		"Tables": 0, "Requests": int64(0), "Throttled": int64(0), "Unprocessed": int64(0), "Reset": nil}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if v := recover(); v != nil {
					t.Fatalf("(*Usage)(nil).%s panicked: %v", name, v)
				}
			}()
			if got := call(); got != want[name] {
				t.Errorf("(*Usage)(nil).%s = %v, want %v", name, got, want[name])
			}
		})
	}
	t.Run("WithUsage", func(t *testing.T) {
		defer func() {
			if v := recover(); v != nil {
				t.Fatalf("WithUsage panicked: %v", v)
			}
		}()
		var v dynashard.Usage
		var nilCtx context.Context
		if got := dynashard.WithUsage(nilCtx, &v); got != nil {
			t.Errorf("WithUsage(nil, &v) = %v, want nil", got)
		}
		ctx := context.Background()
		if got := dynashard.WithUsage(ctx, nil); got != ctx {
			t.Errorf("WithUsage(ctx, nil) = %v, want ctx", got)
		}
		tbl, err := shard.NewTable[Order](&dynamodb.Client{}, shard.Layout{Table: "t", PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(4)})
		if err != nil {
			t.Fatal(err)
		}
		if err := tbl.Put(dynashard.WithUsage(nilCtx, &v), "b", Order{ID: "1"}); !errors.Is(err, dynashard.ErrInvalid) {
			t.Errorf("Put with WithUsage(nil, &v): got %v, want ErrInvalid", err)
		}
	})
}
