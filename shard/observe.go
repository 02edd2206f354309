package shard

import (
	"context"

	"github.com/dynashard/dynashard/internal/observe"
)

// Span attributes of shard's own calls, besides internal/observe's.
const (
	attrMoved     = "dynashard.rebalance.moved" // int: items a Rebalance moved
	attrPacedKeys = "dynashard.load.paced_keys" // int: keys a Load's batch engine paced
)

// begin opens the logical call op of a Table on base ("" for a call
// over many bases, such as Load): a span and call
// metrics if the client has a TracerProvider or MeterProvider, a child of
// the call in ctx if there is one (a dynashard.Usage, or a caller's own
// call), nothing otherwise. A nil ctx or Table opens nothing: the call
// then fails its checks unobserved (a nil ctx cannot carry a call).
func (t *Table[T]) begin(ctx context.Context, op, base string) (context.Context, observe.Call) {
	if ctx == nil || t == nil {
		return ctx, observe.Call{}
	}
	ctx, call := t.obs.Start(ctx, op)
	if call.Traced() {
		call.SetString(observe.AttrTable, t.l.Table)
		if base != "" {
			call.SetString(observe.AttrBase, base)
		}
	}
	return ctx, call
}

// growKind is a Grower decision's name in the grow-decision metric.
func growKind(k DecisionKind) string {
	switch k {
	case Grow:
		return "grow"
	case GrowFailed:
		return "failed"
	case RecommendShrink:
		return "recommend_shrink"
	}
	return k.String()
}
