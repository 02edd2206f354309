package timeseries

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard/internal/ddbtest"
)

// describe waits for name to be ACTIVE and returns its throughput.
func describe(t *testing.T, c *dynamodb.Client, name string) Throughput {
	t.Helper()
	ctx := context.Background()
	w := dynamodb.NewTableExistsWaiter(c, func(o *dynamodb.TableExistsWaiterOptions) { o.MinDelay = 20 * time.Millisecond })
	out, err := w.WaitForOutput(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 30*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return described(out.Table)
}

// TestTuneAcrossPeriods advances the clock across three days: each day's
// Ensure creates the current and next tables hot, and Tune dials the
// tables past ColdAfter down, once, reporting the per-partition share the
// model gives (3 partitions made by the hot throughput, kept when cold).
func TestTuneAcrossPeriods(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c := s.Client()
		in, err := ddbtest.TableInput("pk:S", "sk:S")
		if err != nil {
			t.Fatal(err)
		}
		in.BillingMode = types.BillingModePayPerRequest // Hot overrides it
		hot := Throughput{RCU: 600, WCU: 2000}          // 3 partitions: ⌈600/3000 + 2000/1000⌉
		cold := Throughput{RCU: 60, WCU: 150}
		m, err := New(c, Router{Prefix: ddbtest.TableName(), Period: Day}, in, func(o *Options) {
			o.Hot, o.Cold = hot, cold
		})
		if err != nil {
			t.Fatal(err)
		}
		day1 := date(2026, 11, 22, 10)
		t.Cleanup(func() { m.Retain(context.Background(), day1.AddDate(1, 0, 0)) })
		r := m.Router()
		wantCold := func(age int, day time.Time) Change {
			return Change{
				Table: r.Table(day), Age: age, From: hot, To: cold,
				Partitions: 3, PartitionRCU: 20, PartitionWCU: 50,
			}
		}
		for i, want := range [][]Change{
			nil,
			{wantCold(1, day1)},
			{wantCold(1, day1.AddDate(0, 0, 1))},
		} {
			now := day1.AddDate(0, 0, i)
			if _, err := m.Ensure(ctx, now, 1); err != nil {
				t.Fatal(err)
			}
			for _, at := range []time.Time{now, now.AddDate(0, 0, 1)} {
				if got := describe(t, c, r.Table(at)); got != hot {
					t.Errorf("day %d: new table %s: got %v, want %v", i+1, r.Table(at), got, hot)
				}
			}
			got, err := m.Tune(ctx, now)
			if err != nil {
				t.Fatalf("day %d: Tune: %v", i+1, err)
			}
			for j := range got {
				if got[j].Warning == "" {
					t.Errorf("day %d: %s: no warning for %g WCU per partition", i+1, got[j].Table, got[j].PartitionWCU)
				}
				got[j].Warning = ""
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("day %d: Tune (-want +got):\n%s", i+1, diff)
			}
			for back := 1; back <= i; back++ {
				name := r.Table(now.AddDate(0, 0, -back))
				if got := describe(t, c, name); got != cold {
					t.Errorf("day %d: old table %s: got %v, want %v", i+1, name, got, cold)
				}
			}
			// A second run the same day finds nothing to do.
			if again, err := m.Tune(ctx, now); err != nil || len(again) != 0 {
				t.Errorf("day %d: second Tune = %v, %v; want nothing", i+1, again, err)
			}
		}
	})
}

// TestTuneOnDemand: a Cold of OnDemand switches old tables' billing mode.
func TestTuneOnDemand(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c := s.Client()
		in, err := ddbtest.TableInput("pk:S")
		if err != nil {
			t.Fatal(err)
		}
		m, err := New(c, Router{Prefix: ddbtest.TableName(), Period: Month}, in, func(o *Options) {
			o.Hot = Throughput{RCU: 50, WCU: 50}
			o.Cold = Throughput{OnDemand: true}
			o.HotPeriods = 1
			o.ColdAfter = 1
		})
		if err != nil {
			t.Fatal(err)
		}
		at := date(2026, 1, 15, 0)
		t.Cleanup(func() { m.Retain(context.Background(), at.AddDate(1, 0, 0)) })
		if _, err := m.Ensure(ctx, at, 0); err != nil {
			t.Fatal(err)
		}
		name := m.Router().Table(at)
		describe(t, c, name)
		// One month on, age 1 is not past ColdAfter; two months on it is.
		if got, err := m.Tune(ctx, at.AddDate(0, 1, 0)); err != nil || len(got) != 0 {
			t.Fatalf("age 1: Tune = %v, %v; want nothing", got, err)
		}
		got, err := m.Tune(ctx, at.AddDate(0, 2, 0))
		if err != nil {
			t.Fatal(err)
		}
		want := []Change{{Table: name, Age: 2, From: Throughput{RCU: 50, WCU: 50}, To: Throughput{OnDemand: true}}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Tune (-want +got):\n%s", diff)
		}
		if got := describe(t, c, name); !got.OnDemand {
			t.Errorf("%s after Tune: %v, want on-demand", name, got)
		}
	})
}

// TestBadOptions: Options that cannot work fail New with ErrInvalid,
// before any request.
func TestBadOptions(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		cc := &countingClient{Client: s.Client()}
		in, err := ddbtest.TableInput("pk:S")
		if err != nil {
			t.Fatal(err)
		}
		r := Router{Prefix: ddbtest.TableName(), Period: Day}
		for name, o := range map[string]Options{
			"negative HotPeriods": {HotPeriods: -1},
			"negative ColdAfter":  {ColdAfter: -1},
			"on-demand Hot":       {Hot: Throughput{OnDemand: true}},
			"Hot without WCU":     {Hot: Throughput{RCU: 5}},
			"negative Hot":        {Hot: Throughput{RCU: -5, WCU: 5}},
			"Cold without RCU":    {Cold: Throughput{WCU: 5}},
			"on-demand Cold, RCU": {Cold: Throughput{RCU: 5, WCU: 5, OnDemand: true}},
			"Cold above Hot":      {Hot: Throughput{RCU: 5, WCU: 5}, Cold: Throughput{RCU: 10, WCU: 1}},
		} {
			if _, err := New(cc, r, in, func(p *Options) { *p = o }); !errors.Is(err, ErrInvalid) {
				t.Errorf("%s: New: got %v, want ErrInvalid", name, err)
			}
		}
		if n := cc.n.Load(); n != 0 {
			t.Errorf("%d requests for bad options, want none", n)
		}
		// The zero Options (and a nil optFn) are today's behaviour.
		if _, err := New(cc, r, in, nil, func(*Options) {}); err != nil {
			t.Errorf("zero Options: %v", err)
		}
		var nilCtx context.Context
		m := mustNew(t, cc, r, in)
		if _, err := m.Tune(nilCtx, time.Now()); !errors.Is(err, ErrInvalid) {
			t.Errorf("Tune(nil ctx): got %v, want ErrInvalid", err)
		}
		if got, err := m.Tune(context.Background(), time.Now()); err != nil || got != nil {
			t.Errorf("Tune with zero Options = %v, %v; want nothing", got, err)
		}
		if n := cc.n.Load(); n != 0 {
			t.Errorf("%d requests, want none", n)
		}
	})
}

// refusingClient answers every UpdateTable as DynamoDB does past its daily
// decrease limit; neither local server enforces that limit.
type refusingClient struct {
	*dynamodb.Client
	updates int
}

func (c *refusingClient) UpdateTable(context.Context, *dynamodb.UpdateTableInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error) {
	c.updates++
	return nil, &types.LimitExceededException{Message: aws.String("Subscriber limit exceeded: Provisioned throughput decreases are limited within a given UTC day")}
}

// TestTuneDecreaseLimit: a refused decrease is reported as a *TableError
// matching ErrDecreaseLimit, once per table, not retried.
func TestTuneDecreaseLimit(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		rc := &refusingClient{Client: s.Client()}
		in, err := ddbtest.TableInput("pk:S")
		if err != nil {
			t.Fatal(err)
		}
		m, err := New(rc, Router{Prefix: ddbtest.TableName(), Period: Day}, in, func(o *Options) {
			o.Hot = Throughput{RCU: 20, WCU: 20}
			o.Cold = Throughput{RCU: 5, WCU: 5}
		})
		if err != nil {
			t.Fatal(err)
		}
		at := date(2026, 3, 1, 0)
		t.Cleanup(func() { m.Retain(context.Background(), at.AddDate(1, 0, 0)) })
		if _, err := m.Ensure(ctx, at, 1); err != nil {
			t.Fatal(err)
		}
		for _, d := range []int{0, 1} {
			describe(t, rc.Client, m.Router().Table(at.AddDate(0, 0, d)))
		}
		got, err := m.Tune(ctx, at.AddDate(0, 0, 2))
		var te *TableError
		if !errors.Is(err, ErrDecreaseLimit) || !errors.As(err, &te) || len(got) != 0 {
			t.Fatalf("Tune = %v, %v; want no change and ErrDecreaseLimit", got, err)
		}
		var le *types.LimitExceededException
		if !errors.As(err, &le) {
			t.Errorf("Tune error %v does not hold the SDK's LimitExceededException", err)
		}
		if rc.updates != 2 {
			t.Errorf("%d UpdateTable calls for 2 tables, want 2 (no retry)", rc.updates)
		}
	})
}
