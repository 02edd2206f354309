package observe

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// answer is an SDK method's shape answering with fixed capacity: the seam's
// arithmetic is tested here, what servers report in the packages' tests.
func answer(units float64) Op[dynamodb.BatchWriteItemInput, dynamodb.BatchWriteItemOutput] {
	return func(_ context.Context, in *dynamodb.BatchWriteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
		out := &dynamodb.BatchWriteItemOutput{}
		if in.ReturnConsumedCapacity != "" {
			out.ConsumedCapacity = []types.ConsumedCapacity{{TableName: aws.String("t"), CapacityUnits: aws.Float64(units),
				GlobalSecondaryIndexes: map[string]types.Capacity{"g": {CapacityUnits: aws.Float64(units / 2)}}}}
		}
		out.UnprocessedItems = map[string][]types.WriteRequest{"t": make([]types.WriteRequest, 3)}
		return out, nil
	}
}

// TestOffCostsNothing: with no Tally and no Scope, a call and its request
// allocate nothing, keep the context and ask for no capacity.
func TestOffCostsNothing(t *testing.T) {
	ctx := context.Background()
	var s *Scope
	op := answer(1)
	in := &dynamodb.BatchWriteItemInput{}
	allocs := testing.AllocsPerRun(100, func() {
		cctx, call := s.Start(ctx, "x.Op")
		if cctx != ctx || call.On() {
			t.Fatal("an unobserved call changed the context")
		}
		_, _ = Do(cctx, op, in)
		call.End(cctx, nil)
	})
	own := testing.AllocsPerRun(100, func() { _, _ = op(ctx, in) })
	if allocs != own {
		t.Errorf("%v allocations per unobserved call, want only the op's own %v", allocs, own)
	}
	if in.ReturnConsumedCapacity != "" {
		t.Errorf("an unobserved request asked for %q", in.ReturnConsumedCapacity)
	}
}

// TestNested: a request of a nested call adds once to each Tally in the
// context, and to each enclosing call's totals.
func TestNested(t *testing.T) {
	var outer, inner Tally
	ctx := WithTally(context.Background(), &outer)
	ctx, a := (*Scope)(nil).Start(ctx, "a.Op")
	ctx, b := (*Scope)(nil).Start(ctx, "b.Op")
	ictx := WithTally(ctx, &inner)
	if _, err := Do(ictx, answer(4), &dynamodb.BatchWriteItemInput{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Do(ctx, answer(2), &dynamodb.BatchWriteItemInput{}); err != nil {
		t.Fatal(err)
	}
	o, i := outer.Report(), inner.Report()
	if o.Requests != 2 || o.Tables["t"] != (Capacity{Write: 6}) || o.Indexes["t"]["g"] != (Capacity{Write: 3}) || o.Unprocessed != 6 {
		t.Errorf("outer %+v, want 2 requests, 6 write units (3 on g), 6 unprocessed", o)
	}
	if i.Requests != 1 || i.Tables["t"] != (Capacity{Write: 4}) {
		t.Errorf("inner %+v, want 1 request, 4 write units", i)
	}
	if a.st.requests.Load() != 2 || b.st.requests.Load() != 2 || a.st.capacity != (Capacity{Write: 6}) {
		t.Errorf("calls saw %d and %d requests, %+v; want 2, 2, 6 write units", a.st.requests.Load(), b.st.requests.Load(), a.st.capacity)
	}
}

// BenchmarkCall: what the seam adds to one logical call of one request,
// unobserved and with a Tally, against calling the method directly.
func BenchmarkCall(b *testing.B) {
	out := &dynamodb.GetItemOutput{ConsumedCapacity: &types.ConsumedCapacity{TableName: aws.String("t"), CapacityUnits: aws.Float64(1)}}
	op := Op[dynamodb.GetItemInput, dynamodb.GetItemOutput](func(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
		return out, nil
	})
	in := &dynamodb.GetItemInput{}
	// Five values deep, as a service's request context is.
	ctx := context.Background()
	type depth int
	for i := range 5 {
		ctx = context.WithValue(ctx, depth(i), i)
	}
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			_, _ = op(ctx, in)
		}
	})
	b.Run("off", func(b *testing.B) {
		var s *Scope
		for b.Loop() {
			cctx, call := s.Start(ctx, "x.Op")
			_, _ = Do(cctx, op, in)
			call.End(cctx, nil)
		}
	})
	b.Run("tally", func(b *testing.B) {
		var t Tally
		tctx := WithTally(ctx, &t)
		var s *Scope
		for b.Loop() {
			cctx, call := s.Start(tctx, "x.Op")
			_, _ = Do(cctx, op, in)
			call.End(cctx, nil)
		}
	})
}
