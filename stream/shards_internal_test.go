package stream

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

const lineageARN = "arn:aws:dynamodb:ddblocal:000000000000:table/orders/stream/2026-11-27T21:15:28.112"

func shardID(i int) string { return fmt.Sprintf("shardId-%020d-%08x", i, i) }

// forest makes n shards, each the child of an earlier one or a root, the
// oldest ancestors trimmed (not listed), in a random listing order.
func forest(rnd *rand.Rand, n int) (listed []types.Shard, parent []int) {
	parent = make([]int, n)
	trimmed := make([]bool, n)
	for i := range n {
		parent[i] = -1
		if i > 0 && rnd.IntN(4) > 0 {
			parent[i] = rnd.IntN(i)
		}
		trimmed[i] = (parent[i] < 0 || trimmed[parent[i]]) && rnd.IntN(3) == 0
	}
	for i := range n {
		if trimmed[i] {
			continue
		}
		sh := types.Shard{ShardId: aws.String(shardID(i))}
		if parent[i] >= 0 {
			sh.ParentShardId = aws.String(shardID(parent[i]))
		}
		listed = append(listed, sh)
	}
	rnd.Shuffle(len(listed), func(i, j int) { listed[i], listed[j] = listed[j], listed[i] })
	return listed, parent
}

// TestReadyLineage reads random shard forests as Poll does, finishing a
// random part of the ready shards each pass: a shard is ready exactly when
// it is unfinished and its parent is finished or not listed, and every
// listed shard is finished in the end.
func TestReadyLineage(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for round := range 500 {
		listed, parent := forest(rnd, 1+rnd.IntN(40))
		isListed := map[string]bool{}
		for _, sh := range listed {
			isListed[*sh.ShardId] = true
		}
		var cp Checkpoint
		for pass := 0; !allFinished(listed, cp); pass++ {
			ids := ready(listed, cp)
			if !slices.IsSorted(ids) || len(ids) == 0 {
				t.Fatalf("round %d pass %d: ready %v: want sorted and not empty", round, pass, ids)
			}
			for _, sh := range listed {
				id := *sh.ShardId
				var i int
				fmt.Sscanf(id, "shardId-%d", &i)
				p := ""
				if parent[i] >= 0 {
					p = shardID(parent[i])
				}
				want := !cp.position(id).Finished && (p == "" || !isListed[p] || cp.position(p).Finished)
				if got := slices.Contains(ids, id); got != want {
					t.Fatalf("round %d pass %d: shard %s (parent %q) ready %v, want %v", round, pass, id, p, got, want)
				}
			}
			for _, id := range ids {
				if rnd.IntN(2) == 0 || id == ids[0] {
					cp = cp.with(lineageARN, id, ShardPosition{Finished: true})
				}
			}
		}
	}
}

// TestReadyCases are hand-made listings: a split, a trimmed parent, a
// shard half read.
func TestReadyCases(t *testing.T) {
	sh := func(id, parent string) types.Shard {
		s := types.Shard{ShardId: aws.String(id)}
		if parent != "" {
			s.ParentShardId = aws.String(parent)
		}
		return s
	}
	a, b, c, d := shardID(1), shardID(2), shardID(3), shardID(4)
	split := []types.Shard{sh(c, a), sh(b, a), sh(a, ""), sh(d, "shardId-trimmed")}
	var cp Checkpoint
	if got, want := ready(split, cp), []string{a, d}; !slices.Equal(got, want) {
		t.Errorf("fresh: got %v, want %v", got, want)
	}
	cp = cp.with(lineageARN, a, ShardPosition{After: "000000000000000000007"})
	if got, want := ready(split, cp), []string{a, d}; !slices.Equal(got, want) {
		t.Errorf("parent half read: got %v, want %v", got, want)
	}
	cp = cp.with(lineageARN, a, ShardPosition{After: "000000000000000000009", Finished: true})
	if got, want := ready(split, cp), []string{b, c, d}; !slices.Equal(got, want) {
		t.Errorf("parent finished: got %v, want %v", got, want)
	}
	cp = cp.with(lineageARN, "shardId-00000000000000000099-gone", ShardPosition{Finished: true})
	cp = cp.with(lineageARN, "shardId-00000000000000000098-lost", ShardPosition{After: "000000000000000000001"})
	gone, lost := unlisted(split, cp)
	if !slices.Equal(gone, []string{"shardId-00000000000000000099-gone"}) || !slices.Equal(lost, []string{"shardId-00000000000000000098-lost"}) {
		t.Errorf("unlisted: got %v and %v", gone, lost)
	}
}

// TestSeqAfter compares sequence numbers as the numbers they are.
func TestSeqAfter(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	num := func() string {
		s := fmt.Sprint(rnd.Uint64() >> rnd.IntN(64))
		if rnd.IntN(2) == 0 {
			s += fmt.Sprint(rnd.Uint64())
		}
		return fmt.Sprintf("%0*s", 21+rnd.IntN(4), s)
	}
	for range 10000 {
		a, b := num(), num()
		if rnd.IntN(10) == 0 {
			b = a
		}
		x, _ := new(big.Int).SetString(a, 10)
		y, _ := new(big.Int).SetString(b, 10)
		if got, want := seqAfter(a, b), x.Cmp(y) > 0; got != want {
			t.Fatalf("seqAfter(%s, %s) = %v, want %v", a, b, got, want)
		}
	}
}
