package shard_test

import (
	"errors"
	"math"
	"testing"

	"github.com/dynashard/dynashard/shard"
)

// TestNewGrowerRefusesNaN: a NaN or infinite Threshold or ShrinkBelow
// compares false with everything, so the Grower would never judge a
// window hot (or always recommend a shrink); NewGrower refuses them with
// ErrInvalid, as it refuses a negative one.
func TestNewGrowerRefusesNaN(t *testing.T) {
	for name, f := range map[string]func(*shard.GrowOptions){
		"Threshold NaN":    func(o *shard.GrowOptions) { o.Threshold = math.NaN() },
		"ShrinkBelow NaN":  func(o *shard.GrowOptions) { o.ShrinkBelow = math.NaN() },
		"ShrinkBelow +Inf": func(o *shard.GrowOptions) { o.ShrinkBelow = math.Inf(1) },
	} {
		if g, err := shard.NewGrower(f); !errors.Is(err, shard.ErrInvalid) || g != nil {
			t.Errorf("%s: %v, %v; want nil, ErrInvalid", name, g, err)
		}
	}
	if _, err := shard.NewGrower(func(o *shard.GrowOptions) { o.Threshold, o.ShrinkBelow = 1, 0.5 }); err != nil {
		t.Errorf("Threshold 1, ShrinkBelow 0.5: %v, want them accepted", err)
	}
}
