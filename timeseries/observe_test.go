package timeseries

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/localddb"
)

// TestUsage: Tables reads and writes no items; its requests (CreateTable,
// ListTables, DescribeTable, UpdateTable, DeleteTable) are control-plane
// requests, which consume no capacity units and report none. With a
// dynashard.Usage in the context, each call's capacity is therefore
// exactly zero on every table, and its Requests() is exactly what the
// client sent: Ensure one CreateTable per period, Tune one ListTables per
// page and a DescribeTable and an UpdateTable per table it dials down,
// Retain one ListTables per page and one DeleteTable per table.
func TestUsage(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		cc := &countingClient{Client: s.Client()}
		in, err := ddbtest.TableInput("pk:S")
		if err != nil {
			t.Fatal(err)
		}
		in.BillingMode = types.BillingModePayPerRequest // Hot overrides it for the first two periods
		m, err := New(cc, Router{Prefix: ddbtest.TableName(), Period: Day}, in, func(o *Options) {
			o.Hot = Throughput{RCU: 50, WCU: 50}
			o.Cold = Throughput{RCU: 5, WCU: 5}
		})
		if err != nil {
			t.Fatal(err)
		}
		now := date(2026, 11, 22, 10)
		t.Cleanup(func() { m.Retain(context.Background(), now.AddDate(1, 0, 0)) })

		var u dynashard.Usage
		uctx := dynashard.WithUsage(ctx, &u)
		// check compares u with a call's requests (sent, as the client
		// counted them; want, when the call's count is known beforehand)
		// and zero capacity, then resets both counts.
		check := func(t *testing.T, what string, want int64) {
			t.Helper()
			sent := cc.n.Swap(0)
			if got := u.Requests(); got != sent || (want >= 0 && got != want) {
				t.Errorf("%s: Usage counted %d requests; the client sent %d, want %d", what, got, sent, want)
			}
			if got := u.Total(); got != (dynashard.Capacity{}) || len(u.Tables()) != 0 {
				t.Errorf("%s: capacity %+v by table %v, want none: control-plane requests consume no units", what, got, u.Tables())
			}
			if u.Throttled() != 0 || u.Unprocessed() != 0 {
				t.Errorf("%s: %d throttled, %d unprocessed, want none", what, u.Throttled(), u.Unprocessed())
			}
			u.Reset()
		}

		const ahead = 2
		created, err := m.Ensure(uctx, now.AddDate(0, 0, -2), ahead)
		if err != nil || len(created) != ahead+1 {
			t.Fatalf("Ensure: %v, %v; want %d tables", created, err, ahead+1)
		}
		check(t, "Ensure", ahead+1)
		for _, name := range created {
			describe(t, cc.Client, name) // Tune skips a table not ACTIVE yet
		}

		n := 0
		for _, err := range m.List(uctx) {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		if n != ahead+1 {
			t.Errorf("List: %d tables, want %d", n, ahead+1)
		}
		check(t, "List", -1)

		// Two tables ended before now's: each a DescribeTable and an
		// UpdateTable after the listing.
		pages := listPages(t, cc, m)
		changes, err := m.Tune(uctx, now)
		if err != nil || len(changes) != 2 {
			t.Fatalf("Tune: %v, %v; want 2 changes", changes, err)
		}
		check(t, "Tune", pages+2*2)

		pages = listPages(t, cc, m)
		deleted, err := m.Retain(uctx, now)
		if err != nil || len(deleted) != 2 {
			t.Fatalf("Retain: %v, %v; want 2 deleted", deleted, err)
		}
		check(t, "Retain", pages+2)
	})
}

// listPages returns the ListTables pages a listing of m's tables takes
// now, and resets the client's count.
func listPages(t *testing.T, cc *countingClient, m *Tables) int64 {
	t.Helper()
	cc.n.Store(0)
	for _, err := range m.List(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
	}
	return cc.n.Swap(0)
}

// ctxClient records the context of every CreateTable and ListTables.
type ctxClient struct {
	*dynamodb.Client
	seen []context.Context
}

func (c *ctxClient) CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	c.seen = append(c.seen, ctx)
	return c.Client.CreateTable(ctx, in, optFns...)
}

func (c *ctxClient) ListTables(ctx context.Context, in *dynamodb.ListTablesInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ListTablesOutput, error) {
	c.seen = append(c.seen, ctx)
	return c.Client.ListTables(ctx, in, optFns...)
}

// TestUnobserved: with no Usage in the context and no provider on the
// client, a call opens nothing: each request gets the caller's context
// itself (observe.Scope.Start returned it unchanged, so nothing was
// allocated for the call). With a Usage, it gets the call's context.
func TestUnobserved(t *testing.T) {
	s := ddbtest.Get(t, localddb.DynamoDBLocal)
	c := &ctxClient{Client: s.Client()}
	in, err := ddbtest.TableInput("pk:S")
	if err != nil {
		t.Fatal(err)
	}
	in.BillingMode = types.BillingModePayPerRequest
	m := mustNew(t, c, Router{Prefix: ddbtest.TableName(), Period: Month}, in)
	at := date(2390, 1, 1, 0)
	t.Cleanup(func() { m.Retain(context.Background(), at.AddDate(1, 0, 0)) })
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, 1)
	var u dynashard.Usage
	for _, tc := range []struct {
		ctx  context.Context
		same bool
	}{{ctx, true}, {dynashard.WithUsage(ctx, &u), false}} {
		c.seen = nil
		if _, err := m.Ensure(tc.ctx, at, 0); err != nil {
			t.Fatal(err)
		}
		for _, err := range m.List(tc.ctx) {
			if err != nil {
				t.Fatal(err)
			}
		}
		if len(c.seen) < 2 {
			t.Fatalf("saw %d requests, want a CreateTable and a ListTables at least", len(c.seen))
		}
		for i, got := range c.seen {
			if (got == tc.ctx) != tc.same {
				t.Errorf("usage %v: request %d got the caller's context: %v, want %v", !tc.same, i, got == tc.ctx, tc.same)
			}
		}
	}
}
