package shard

import (
	"context"

	"github.com/dynashard/dynashard/internal/record"
)

// The per-base operations on a Layout and any client, as shard's own tests
// call them (the public home is Table: Reshard, Shards and Rebalance).
// Verify is Shards without the history; Record is a write's record check.

func (l Layout) Reshard(ctx context.Context, c reshardClient, base string, n int) ([]int, error) {
	return l.resize(ctx, c, base, n)
}

func (l Layout) Shards(ctx context.Context, c record.Reader, base string) ([]int, error) {
	h, _, err := l.rec().Shards(ctx, c, base)
	return h, err
}

func (l Layout) Verify(ctx context.Context, c record.Reader, base string) error {
	_, err := l.Shards(ctx, c, base)
	return err
}

func (l Layout) Record(ctx context.Context, c record.Writer, base string) error {
	d := l.rec()
	_, err := d.Recorded(ctx, c, base, d.TTL)
	return err
}

func Rebalance(ctx context.Context, c rebalanceClient, l Layout, base string, optFns ...func(*RebalanceOptions)) (RebalanceProgress, error) {
	return rebalance(ctx, c, l, base, optFns...)
}

// Announce is the first step of a Reshard alone: n pending, as a Grower
// leaves it until a write of the base finishes it.
func (l Layout) Announce(ctx context.Context, c reshardClient, base string, n int) error {
	_, err := l.reshard(ctx, c, base, n)
	return err
}
