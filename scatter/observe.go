package scatter

import (
	"context"

	"github.com/dynashard/dynashard/internal/observe"
)

// begin opens a logical call of the Scatter (its span and metrics, if the
// client has providers or ctx carries a dynashard.Usage).
func (s *Scatter) begin(ctx context.Context, op, base string) (context.Context, observe.Call) {
	ctx, call := s.obs.Start(ctx, op)
	if call.Traced() {
		call.SetString(observe.AttrTable, s.layout.Table)
		call.SetString(observe.AttrBase, base)
	}
	return ctx, call
}

// end closes a call that planned p (nil if planning failed) and returned
// n items (or, for Count, matches).
func (s *Scatter) end(ctx context.Context, call observe.Call, p *plan, n int, err error) {
	if !call.On() {
		return
	}
	if call.Traced() && p != nil {
		call.SetInts(observe.AttrHistory, p.history)
		call.SetInt(observe.AttrQueried, len(p.pks))
		call.SetInt(observe.AttrItems, n)
	}
	call.End(ctx, err)
}
