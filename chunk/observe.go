package chunk

import (
	"context"

	"github.com/dynashard/dynashard/internal/observe"
)

// This file opens the logical calls of the Store's entry points
// (internal/observe): a span "dynashard.chunk.<Op>" when the client has a
// TracerProvider, and the capacity of every request a call sends added to
// the dynashard.Usage its context carries. With neither, nothing is
// allocated and no request asks for its consumed capacity.

// attrBytes is the span attribute of a payload's length, in bytes before
// compression.
const attrBytes = "dynashard.bytes"

// attrDeleted is the span attribute of the chunk items and objects a
// Sweep deleted.
const attrDeleted = "dynashard.deleted"

// start opens the logical call op under ctx. A call on a Store not made by
// New still counts (it fails its checks inside the call); a nil ctx opens
// nothing, having nothing to carry it.
func (s *Store) start(ctx context.Context, op string) (context.Context, observe.Call) {
	if ctx == nil {
		return ctx, observe.Call{}
	}
	var obs *observe.Scope
	if s != nil {
		obs = s.obs
	}
	return obs.Start(ctx, op)
}

// traceKey sets the span attributes of a call on key: the parent table and
// the key. Callers check call.Traced() first, so that nothing is rendered
// when no span is recorded.
func (s *Store) traceKey(call observe.Call, key Key) {
	if s != nil {
		call.SetString(observe.AttrTable, s.parents)
	}
	call.SetString(observe.AttrBase, key.String())
}

// end closes call with what it stored or read (its chunk items and payload
// length, as span attributes) and its error.
func end(ctx context.Context, call observe.Call, info Info, err error) {
	if call.Traced() && err == nil {
		call.SetInt(observe.AttrItems, info.Chunks)
		call.SetInt(attrBytes, int(info.Size))
	}
	call.End(ctx, err)
}
