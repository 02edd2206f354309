package scatter

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/keyorder"
	"github.com/dynashard/dynashard/shard"
)

// movingTable is a Client over items in memory that moves items as a
// Rebalance does while a read goes on: once a Query has returned a shard,
// each item of it listed in moves is deleted there and put at its new
// key, unchanged but for the partition key. So every item is met at its
// old key first, and a read meets each moved item twice unless it drops
// one. A Query returns the whole shard in one page.
type movingTable struct {
	Client
	mu    sync.Mutex
	items map[string][]map[string]types.AttributeValue // by partition key
	moves map[string]map[string]string                 // old key -> item id -> new key
}

func (m *movingTable) Query(_ context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	pk := in.ExpressionAttributeValues[pkValue].(*types.AttributeValueMemberS).Value
	m.mu.Lock()
	defer m.mu.Unlock()
	page := slices.Clone(m.items[pk])
	slices.SortFunc(page, func(a, b map[string]types.AttributeValue) int {
		c, _ := keyorder.Compare(a["sk"], b["sk"])
		if in.ScanIndexForward != nil && !*in.ScanIndexForward {
			c = -c
		}
		return c
	})
	var kept []map[string]types.AttributeValue
	for _, it := range m.items[pk] {
		to, ok := m.moves[pk][it["id"].(*types.AttributeValueMemberS).Value]
		if !ok {
			kept = append(kept, it)
			continue
		}
		moved := map[string]types.AttributeValue{}
		for k, v := range it {
			moved[k] = v
		}
		moved["pk"] = &types.AttributeValueMemberS{Value: to}
		delete(moved, "dynashard:w") // as a move does
		m.items[to] = append(m.items[to], moved)
	}
	m.items[pk] = kept
	delete(m.moves, pk)
	return &dynamodb.QueryOutput{Items: page, Count: int32(len(page)), ScannedCount: int32(len(page))}, nil
}

// TestOnceAcrossMoves: ordered and unordered reads, ascending and
// descending, over a history of two counts return every item once while
// a Rebalance moves half of the items it moves under them, against the
// model "every item written, once". Under Random (history [6 2]) items in
// suffixes 3..6 move to 1..2, and sort keys repeat between distinct items;
// under Hash (history [2 6]) items move from the key of count 2 to the
// key of count 6, and the sort key is the id. Moved items carry
// dynashard:w at their old key, which no item returned carries.
func TestOnceAcrossMoves(t *testing.T) {
	for _, tc := range []struct {
		name     string
		strategy shard.Strategy
		history  []int
	}{
		{"Random", shard.Random(6), []int{6, 2}},
		{"Hash", shard.Hash(2), []int{2, 6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := shard.Layout{Table: "t", PartitionKey: "pk", SortKey: "sk", Strategy: tc.strategy}
			calc := shard.Calculated(tc.strategy)
			for seed := range uint64(30) {
				r := rand.New(rand.NewPCG(seed, 7))
				m := &movingTable{items: map[string][]map[string]types.AttributeValue{}, moves: map[string]map[string]string{}}
				var ids []string
				taken := map[string]bool{} // pk + sk: one item per key
				for i := range 60 + r.IntN(100) {
					id := fmt.Sprintf("i%03d", i)
					sk := id
					from, to := 0, 0
					if calc {
						from, to = shard.Hash(2).Pick(id), shard.Hash(6).Pick(id)
					} else {
						sk = fmt.Sprintf("k%02d", r.IntN(25)) // distinct items share sort keys
						from, to = 1+r.IntN(6), 1+r.IntN(2)
						if from <= 2 {
							to = from
						}
					}
					if r.IntN(2) == 0 {
						from = to // moved already, or written under the newest count
					}
					if taken[fmt.Sprint(from, sk)] || taken[fmt.Sprint(to, sk)] {
						continue
					}
					taken[fmt.Sprint(from, sk)], taken[fmt.Sprint(to, sk)] = true, true
					ids = append(ids, id)
					pk, it := shard.Key("day", from), map[string]types.AttributeValue{"sk": &types.AttributeValueMemberS{Value: sk}, "id": &types.AttributeValueMemberS{Value: id}}
					it["pk"] = &types.AttributeValueMemberS{Value: pk}
					if from != to {
						it["dynashard:w"] = &types.AttributeValueMemberS{Value: "token"}
						if m.moves[pk] == nil {
							m.moves[pk] = map[string]string{}
						}
						m.moves[pk][id] = shard.Key("day", to)
					}
					m.items[pk] = append(m.items[pk], it)
				}
				slices.Sort(ids)
				for _, read := range []struct {
					name string
					o    Options
				}{
					{"ascending", Options{}}, {"descending", Options{Descending: true}},
					{"unordered, one shard at a time", Options{Unordered: true, MaxConcurrency: 1}}, {"unordered", Options{Unordered: true}},
				} {
					o := read.o
					mc := &movingTable{items: map[string][]map[string]types.AttributeValue{}, moves: map[string]map[string]string{}}
					for pk, items := range m.items {
						mc.items[pk] = slices.Clone(items)
					}
					for pk, mv := range m.moves {
						mc.moves[pk] = map[string]string{}
						for id, to := range mv {
							mc.moves[pk][id] = to
						}
					}
					p, err := newPlan(l, "day", o)
					if err != nil {
						t.Fatal(err)
					}
					if err := p.widen(tc.history); err != nil {
						t.Fatal(err)
					}
					s := &Scatter{c: mc, layout: l}
					run := s.newRun(context.Background(), p, resume{}, -1, 0)
					var got []string
					var prev *Item
					for {
						it, ok, err := run.nextOne()
						if err != nil {
							t.Fatal(err)
						}
						if !ok {
							break
						}
						for name := range it.Attrs {
							if isHidden(name) {
								t.Fatalf("seed %d, %s: item with %s", seed, read.name, name)
							}
						}
						if prev != nil && !o.Unordered {
							c, _ := keyorder.Compare(prev.Attrs["sk"], it.Attrs["sk"])
							if c == 0 {
								c = prev.Suffix - it.Suffix
							}
							if c > 0 != o.Descending {
								t.Fatalf("seed %d, %s: %v before %v", seed, read.name, prev, it)
							}
						}
						prev = &it
						got = append(got, it.Attrs["id"].(*types.AttributeValueMemberS).Value)
					}
					run.close()
					slices.Sort(got)
					if !slices.Equal(got, ids) {
						t.Fatalf("seed %d, %s: got %d ids %v, want each of %d once", seed, read.name, len(got), got, len(ids))
					}
				}
			}
		})
	}
}
