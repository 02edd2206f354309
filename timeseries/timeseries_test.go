package timeseries

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard/internal/ddbtest"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }

func date(y int, m time.Month, d, h int) time.Time { return time.Date(y, m, d, h, 0, 0, 0, time.UTC) }

func TestTable(t *testing.T) {
	for _, tc := range []struct {
		p    Period
		at   time.Time
		want string
	}{
		{Day, date(2014, 7, 9, 23), "orders_2014-07-09"},
		{Month, date(2014, 7, 31, 23), "orders_2014-07"},
		{Week, date(2026, 11, 22, 12), "orders_2026-W47"}, // a Sunday ends ISO week 47
		{Week, date(2026, 11, 23, 0), "orders_2026-W48"},
		{Week, date(2027, 1, 1, 0), "orders_2026-W53"}, // ISO year differs from calendar year
		{Week, date(2024, 12, 30, 0), "orders_2025-W01"},
	} {
		r := Router{Prefix: "orders", Period: tc.p}
		if got := r.Table(tc.at); got != tc.want {
			t.Errorf("%v Table(%v) = %q, want %q", tc.p, tc.at, got, tc.want)
		}
	}
}

// TestParseInvertsTable checks, for random instants, that the period
// Parse returns holds the instant and that its name is the same.
func TestParseInvertsTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		berlin = time.FixedZone("CET", 3600)
	}
	for _, loc := range []*time.Location{nil, berlin} {
		for _, p := range []Period{Day, Week, Month} {
			r := Router{Prefix: "ev", Period: p, Location: loc}
			for range 2000 {
				at := time.Unix(rng.Int64N(4e9), 0)
				name := r.Table(at)
				start, err := r.Parse(name)
				if err != nil {
					t.Fatalf("%v Parse(%q): %v", p, name, err)
				}
				if at.Before(start) || !at.Before(r.Next(start)) {
					t.Fatalf("%v %v: period [%v, %v) does not hold it", p, at, start, r.Next(start))
				}
				if got := r.Table(start); got != name {
					t.Fatalf("%v Table(Parse(%q)) = %q", p, name, got)
				}
			}
		}
	}
}

func TestParseRejects(t *testing.T) {
	r := Router{Prefix: "orders", Period: Day}
	for _, name := range []string{"", "orders", "orders_", "other_2014-07-09", "orders_2014-7-9", "orders_2014-07-32", "orders_2014-07-09x"} {
		if _, err := r.Parse(name); !errors.Is(err, ErrInvalidName) {
			t.Errorf("Parse(%q): got %v, want ErrInvalidName", name, err)
		}
	}
	w := Router{Prefix: "orders", Period: Week}
	for _, name := range []string{"orders_2026-W00", "orders_2026-W54", "orders_2025-W53", "orders_2026-W7"} {
		if _, err := w.Parse(name); !errors.Is(err, ErrInvalidName) {
			t.Errorf("week Parse(%q): got %v, want ErrInvalidName", name, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"orders_2014-07-09", "orders_2026-W53", "orders_2014-07", "orders_9999-W99"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		for _, p := range []Period{Day, Week, Month} {
			r := Router{Prefix: "orders", Period: p}
			start, err := r.Parse(name)
			if err != nil {
				continue
			}
			if got := r.Table(start); got != name {
				t.Fatalf("%v: Parse(%q) accepted, but Table gives %q", p, name, got)
			}
		}
	})
}

func TestTablesSpan(t *testing.T) {
	r := Router{Prefix: "m", Period: Month}
	got := slices.Collect(r.Tables(date(2025, 11, 30, 0), date(2026, 2, 1, 0)))
	want := []string{"m_2025-11", "m_2025-12", "m_2026-01", "m_2026-02"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Tables (-want +got):\n%s", diff)
	}
	if got := slices.Collect(r.Tables(date(2026, 2, 1, 0), date(2025, 1, 1, 0))); len(got) != 0 {
		t.Errorf("reversed span: got %v, want none", got)
	}
}

func TestEnsureAndRetain(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c := s.Client()
		in, err := ddbtest.TableInput("pk:S", "sk:S")
		if err != nil {
			t.Fatal(err)
		}
		in.BillingMode = types.BillingModePayPerRequest
		m := mustNew(t, c, Router{Prefix: ddbtest.TableName(), Period: Day}, in)
		now := date(2026, 11, 22, 10)
		t.Cleanup(func() { m.Retain(context.Background(), now.AddDate(1, 0, 0)) })

		created, err := m.Ensure(ctx, now.AddDate(0, 0, -3), 3)
		if err != nil {
			t.Fatal(err)
		}
		want := slices.Collect(m.Router().Tables(now.AddDate(0, 0, -3), now))
		if diff := cmp.Diff(want, created); diff != "" {
			t.Fatalf("created (-want +got):\n%s", diff)
		}
		again, err := m.Ensure(ctx, now, 1)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{m.Router().Table(now.AddDate(0, 0, 1))}, again); diff != "" {
			t.Fatalf("second Ensure created (-want +got):\n%s", diff)
		}
		// A table of another prefix must survive retention.
		other := s.Table(t, "pk:S")

		deleted, err := m.Retain(ctx, now.Add(-time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		wantDeleted := slices.Collect(m.Router().Tables(now.AddDate(0, 0, -3), now.AddDate(0, 0, -1)))
		if diff := cmp.Diff(wantDeleted, deleted); diff != "" {
			t.Fatalf("deleted (-want +got):\n%s", diff)
		}
		// Real DynamoDB, like dynalite, lists a table while it is deleting.
		w := dynamodb.NewTableNotExistsWaiter(c, func(o *dynamodb.TableNotExistsWaiterOptions) { o.MinDelay = 20 * time.Millisecond })
		for _, name := range deleted {
			if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 30*time.Second); err != nil {
				t.Fatal(err)
			}
		}
		var left []string
		for name, err := range m.List(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			left = append(left, name)
		}
		wantLeft := []string{m.Router().Table(now), m.Router().Table(now.AddDate(0, 0, 1))}
		if diff := cmp.Diff(wantLeft, left); diff != "" {
			t.Errorf("left (-want +got):\n%s", diff)
		}
		if _, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(other)}); err != nil {
			t.Errorf("unrelated table %s: %v", other, err)
		}
	})
}

// recovered runs f and returns what it panicked with.
func recovered(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}

// TestRouterCheck: a Router with a Period other than Day, Week or Month, or
// a Prefix that cannot start a table name, fails Check and every method
// that returns an error; the others give zero values instead of behaving as
// some other router, and nothing panics.
func TestRouterCheck(t *testing.T) {
	at := date(2014, 7, 9, 12)
	for _, p := range []Period{Day, Week, Month} {
		if err := (Router{Prefix: "orders", Period: p}).Check(); err != nil {
			t.Errorf("%v: Check() = %v, want nil", p, err)
		}
	}
	if err := (Router{Prefix: strings.Repeat("x", 244), Period: Day}).Check(); err != nil {
		t.Errorf("prefix of 244 bytes: Check() = %v, want nil (names of 255 bytes)", err)
	}
	for _, tc := range []struct {
		name string
		r    Router
	}{
		{"zero Period", Router{Prefix: "orders"}},
		{"negative Period", Router{Prefix: "orders", Period: -1}},
		{"unknown Period", Router{Prefix: "orders", Period: Month + 1}},
		{"zero Router", Router{}},
		{"empty Prefix", Router{Period: Day}},
		{"Prefix with a space", Router{Prefix: "my orders", Period: Day}},
		{"Prefix too long", Router{Prefix: strings.Repeat("x", 245), Period: Day}},
	} {
		if v := recovered(func() {
			if err := tc.r.Check(); !errors.Is(err, ErrInvalid) {
				t.Errorf("%s: Check() = %v, want ErrInvalid", tc.name, err)
			}
			if _, err := tc.r.Parse("orders_2014-07-09"); !errors.Is(err, ErrInvalid) {
				t.Errorf("%s: Parse: got %v, want ErrInvalid", tc.name, err)
			}
			if got := tc.r.Table(at); got != "" {
				t.Errorf("%s: Table = %q, want \"\"", tc.name, got)
			}
			if got := slices.Collect(tc.r.Tables(at, at.AddDate(0, 0, 3))); len(got) != 0 {
				t.Errorf("%s: Tables = %v, want none", tc.name, got)
			}
			if p := tc.r.Period; p < Day || p > Month {
				if s, n := tc.r.Start(at), tc.r.Next(at); !s.IsZero() || !n.IsZero() {
					t.Errorf("%s: Start, Next = %v, %v; want zero times", tc.name, s, n)
				}
			}
		}); v != nil {
			t.Errorf("%s: panicked: %v", tc.name, v)
		}
	}
}

// countingClient counts requests on their way to the real server.
type countingClient struct {
	*dynamodb.Client
	n atomic.Int64
}

func (c *countingClient) CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	c.n.Add(1)
	return c.Client.CreateTable(ctx, in, optFns...)
}

func (c *countingClient) DeleteTable(ctx context.Context, in *dynamodb.DeleteTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteTableOutput, error) {
	c.n.Add(1)
	return c.Client.DeleteTable(ctx, in, optFns...)
}

func (c *countingClient) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	c.n.Add(1)
	return c.Client.DescribeTable(ctx, in, optFns...)
}

func (c *countingClient) UpdateTable(ctx context.Context, in *dynamodb.UpdateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error) {
	c.n.Add(1)
	return c.Client.UpdateTable(ctx, in, optFns...)
}

func (c *countingClient) ListTables(ctx context.Context, in *dynamodb.ListTablesInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ListTablesOutput, error) {
	c.n.Add(1)
	return c.Client.ListTables(ctx, in, optFns...)
}

// TestTablesRefuseBadInput: Ensure, List and Retain refuse an invalid
// router, a nil ctx or client and a negative ahead with ErrInvalid, before
// any request.
func TestTablesRefuseBadInput(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		cc := &countingClient{Client: s.Client()}
		in, err := ddbtest.TableInput("pk:S")
		if err != nil {
			t.Fatal(err)
		}
		in.BillingMode = types.BillingModePayPerRequest
		prefix := ddbtest.TableName()
		now := date(2026, 11, 22, 10)
		// Had a bad router been taken for a daily one, this removes its tables.
		t.Cleanup(func() {
			day := mustNew(t, s.Client(), Router{Prefix: prefix, Period: Day}, in)
			day.Retain(context.Background(), now.AddDate(1, 0, 0))
		})
		good := Router{Prefix: prefix, Period: Day}
		for name, r := range map[string]Router{
			"zero Period":    {Prefix: prefix},
			"unknown Period": {Prefix: prefix, Period: 7},
			"empty Prefix":   {Period: Day},
		} {
			if _, err := New(cc, r, in); !errors.Is(err, ErrInvalid) {
				t.Errorf("%s: New: got %v, want ErrInvalid", name, err)
			}
		}
		if _, err := New(nil, good, in); !errors.Is(err, ErrInvalid) {
			t.Errorf("nil client: New: got %v, want ErrInvalid", err)
		}
		if _, err := New(cc, good, nil); !errors.Is(err, ErrInvalid) {
			t.Errorf("nil template: New: got %v, want ErrInvalid", err)
		}
		m := mustNew(t, cc, good, in)
		var nilCtx context.Context
		for _, tc := range []struct {
			name  string
			ctx   context.Context
			ahead int
		}{
			{"nil ctx", nilCtx, 1},
			{"negative ahead", context.Background(), -1},
		} {
			if v := recovered(func() {
				if _, err := m.Ensure(tc.ctx, now, tc.ahead); !errors.Is(err, ErrInvalid) {
					t.Errorf("%s: Ensure: got %v, want ErrInvalid", tc.name, err)
				}
				if tc.ahead < 0 {
					return // only Ensure takes ahead
				}
				for _, err := range m.List(tc.ctx) {
					if !errors.Is(err, ErrInvalid) {
						t.Errorf("%s: List: got %v, want ErrInvalid", tc.name, err)
					}
				}
				if _, err := m.Retain(tc.ctx, now); !errors.Is(err, ErrInvalid) {
					t.Errorf("%s: Retain: got %v, want ErrInvalid", tc.name, err)
				}
			}); v != nil {
				t.Errorf("%s: panicked: %v", tc.name, v)
			}
		}
		if n := cc.n.Load(); n != 0 {
			t.Errorf("%d requests for bad input, want none", n)
		}
	})
}

func mustNew(t *testing.T, c Client, r Router, in *dynamodb.CreateTableInput) *Tables {
	t.Helper()
	m, err := New(c, r, in)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestOneBytePrefix: a one-byte Prefix passes Check, so List and Retain
// must work with it too (ListTables refuses a start name under 3 bytes).
func TestOneBytePrefix(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		in, err := ddbtest.TableInput("pk:S")
		if err != nil {
			t.Fatal(err)
		}
		in.BillingMode = types.BillingModePayPerRequest
		// A year no other test uses, as the prefix cannot be unique.
		at := date(2391, 5, 17, 0)
		m := mustNew(t, s.Client(), Router{Prefix: "z", Period: Month}, in)
		if _, err := m.Ensure(ctx, at, 0); err != nil {
			t.Fatal(err)
		}
		name := m.Router().Table(at)
		t.Cleanup(func() {
			s.Client().DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
		})
		var listed []string
		for n, err := range m.List(ctx) {
			if err != nil {
				t.Fatalf("List: %v", err)
			}
			listed = append(listed, n)
		}
		if !slices.Contains(listed, name) {
			t.Errorf("List = %v, want it to hold %s", listed, name)
		}
		deleted, err := m.Retain(ctx, m.Router().Next(at))
		if err != nil || !slices.Contains(deleted, name) {
			t.Errorf("Retain: deleted %v, %v; want %s deleted", deleted, err, name)
		}
	})
}

// TestZeroTables: a Tables not made by New, zero or nil, fails every
// method with ErrInvalid instead of panicking, and sends nothing (it has
// no client to send with).
func TestZeroTables(t *testing.T) {
	ctx := context.Background()
	now := date(2026, 11, 22, 10)
	for name, m := range map[string]*Tables{"zero": {}, "nil": nil} {
		for _, call := range []struct {
			name string
			run  func() error
		}{
			{"Ensure", func() error { _, err := m.Ensure(ctx, now, 1); return err }},
			{"List", func() error {
				var last error
				for _, err := range m.List(ctx) {
					last = err
				}
				return last
			}},
			{"Retain", func() error { _, err := m.Retain(ctx, now); return err }},
			{"Tune", func() error { _, err := m.Tune(ctx, now); return err }},
		} {
			t.Run(name+"/"+call.name, func(t *testing.T) {
				var err error
				if v := recovered(func() { err = call.run() }); v != nil {
					t.Fatalf("panicked: %v", v)
				}
				if !errors.Is(err, ErrInvalid) {
					t.Errorf("got %v, want ErrInvalid", err)
				}
			})
		}
		if v := recovered(func() {
			if r := m.Router(); r != (Router{}) {
				t.Errorf("%s: Router() = %+v, want the zero Router", name, r)
			}
		}); v != nil {
			t.Errorf("%s: Router panicked: %v", name, v)
		}
	}
}
