package timeseries

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/observe"
	"github.com/dynashard/dynashard/partition"
)

// Throughput is a table's capacity: provisioned RCU and WCU, or on-demand.
// Its zero value means "not set".
type Throughput struct {
	RCU, WCU int64 // provisioned read and write capacity units
	// OnDemand switches the table to on-demand (PAY_PER_REQUEST) billing;
	// RCU and WCU must then be zero. Only Options.Cold may be on-demand.
	OnDemand bool
}

func (t Throughput) isZero() bool { return t == Throughput{} }

func (t Throughput) String() string {
	if t.OnDemand {
		return "on-demand"
	}
	return fmt.Sprintf("%d RCU/%d WCU", t.RCU, t.WCU)
}

// Options change what New's Tables do with throughput. The zero Options
// keep every table as the template describes it and dial nothing.
type Options struct {
	// Hot is the provisioned throughput of the hot periods' tables, which
	// Ensure creates with it (PROVISIONED billing, whatever the template
	// says; the template's indexes without throughput of their own get
	// Hot too). Zero: the template's throughput. Hot cannot be OnDemand.
	Hot Throughput
	// Cold is what Tune dials tables older than ColdAfter periods down to:
	// a lower provisioned throughput, or OnDemand. Zero: Tune changes
	// nothing. Cold provisioned throughput must not exceed Hot.
	Cold Throughput
	// HotPeriods is how many periods, from the one holding now on, Ensure
	// creates hot. Zero means 2: the current period and the next.
	HotPeriods int
	// ColdAfter is the age, in periods, past which Tune dials a table
	// down: the table of the period holding now has age 0, the one before
	// age 1. Zero means every table whose period has ended.
	ColdAfter int
}

// hotPeriods returns HotPeriods with its default.
func (o Options) hotPeriods() int {
	if o.HotPeriods == 0 {
		return 2
	}
	return o.HotPeriods
}

// check returns an error wrapping ErrInvalid for Options that cannot work.
func (o Options) check() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: timeseries.Options: "+format, append([]any{ErrInvalid}, a...)...)
	}
	switch {
	case o.HotPeriods < 0:
		return bad("HotPeriods = %d, want >= 0", o.HotPeriods)
	case o.ColdAfter < 0:
		return bad("ColdAfter = %d, want >= 0", o.ColdAfter)
	case o.Hot.OnDemand:
		return bad("Hot cannot be OnDemand (leave Hot zero and give the template PAY_PER_REQUEST)")
	case o.Hot.RCU < 0 || o.Hot.WCU < 0 || (o.Hot.RCU == 0) != (o.Hot.WCU == 0):
		return bad("Hot = %v, want both RCU and WCU above zero, or both zero", o.Hot)
	case o.Cold.OnDemand && (o.Cold.RCU != 0 || o.Cold.WCU != 0):
		return bad("Cold is OnDemand with %d RCU and %d WCU, want zero", o.Cold.RCU, o.Cold.WCU)
	case !o.Cold.OnDemand && (o.Cold.RCU < 0 || o.Cold.WCU < 0 || (o.Cold.RCU == 0) != (o.Cold.WCU == 0)):
		return bad("Cold = %v, want both RCU and WCU above zero, or both zero", o.Cold)
	case !o.Hot.isZero() && !o.Cold.OnDemand && (o.Cold.RCU > o.Hot.RCU || o.Cold.WCU > o.Hot.WCU):
		return bad("Cold (%v) exceeds Hot (%v)", o.Cold, o.Hot)
	}
	return nil
}

// Warning thresholds of a Change: a tenth of what one partition serves
// (partition.PartitionWCU and partition.PartitionRCU). Below them a single
// partition-key value, which lives on one partition, is held to fewer than
// 100 1-KB writes (or 300 strongly consistent 4-KB reads) per second however
// large the table's total, and the burst capacity DynamoDB keeps (up to 300
// seconds of a partition's unused share) covers less than half a minute at
// a partition's full rate.
const (
	WarnWCU = 100 // per-partition WCU below which a Change carries a Warning
	WarnRCU = 300 // per-partition RCU below which a Change carries a Warning
)

// Change is one table Tune changed (or asked DynamoDB to change).
type Change struct {
	Table    string
	Age      int        // periods before the one holding now (negative: ahead)
	From, To Throughput // before and after
	// Partitions is the partition count the model (package partition)
	// gives the table: created with the larger of From and Hot, then
	// provisioned at To. Partitions never merge, so dialling down keeps
	// them, each with a thinner share. It is a lower bound: data past
	// 10 GB per partition splits more. Zero for an on-demand To.
	Partitions int
	// PartitionRCU and PartitionWCU are each partition's share of To.
	PartitionRCU, PartitionWCU float64
	// Warning is non-empty when a share falls below WarnWCU or WarnRCU.
	Warning string
}

// ErrDecreaseLimit is matched by the error of a table whose throughput
// DynamoDB refused to lower because of its per-table limit on decreases per
// UTC day (a LimitExceededException). Tune does not retry it; a later run,
// after the quota frees up, does.
var ErrDecreaseLimit = errors.New("timeseries: throughput decrease refused (DynamoDB's daily limit)")

// TableError is one table's failure in Tune.
type TableError struct {
	Table string
	Err   error
}

func (e *TableError) Error() string { return "timeseries: tune " + e.Table + ": " + e.Err.Error() }

// Unwrap returns the table's error.
func (e *TableError) Unwrap() error { return e.Err }

// hot returns the CreateTableInput of a hot period's table.
func (m *Tables) hot(in dynamodb.CreateTableInput) dynamodb.CreateTableInput {
	h := m.o.Hot
	if h.isZero() {
		return in
	}
	pt := &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(h.RCU), WriteCapacityUnits: aws.Int64(h.WCU)}
	in.BillingMode = types.BillingModeProvisioned
	in.ProvisionedThroughput = pt
	if len(in.GlobalSecondaryIndexes) > 0 {
		in.GlobalSecondaryIndexes = slices.Clone(in.GlobalSecondaryIndexes)
		for i := range in.GlobalSecondaryIndexes {
			if in.GlobalSecondaryIndexes[i].ProvisionedThroughput == nil {
				in.GlobalSecondaryIndexes[i].ProvisionedThroughput = pt
			}
		}
	}
	return in
}

// age returns how many periods start lies before the period holding now's
// start (negative when it lies after).
func (m *Tables) age(start, now time.Time) int {
	cur := m.r.Start(now)
	n := 0
	for t := start; t.Before(cur); t = m.r.Next(t) {
		n++
	}
	for t := cur; t.Before(start); t = m.r.Next(t) {
		n--
	}
	return n
}

// Tune dials down, to Options.Cold, every table of this router older than
// Options.ColdAfter periods relative to now, and returns what it changed. A
// table already at Cold (or on-demand, or provisioned at or below Cold) is
// skipped, as is one not ACTIVE (the next run sees it). One UpdateTable per
// table; a table DynamoDB refuses is not retried: its error, a *TableError
// (matching ErrDecreaseLimit when the daily decrease limit was the reason),
// is joined into the returned error and Tune goes on with the others. With
// a zero Options.Cold, Tune sends no request and returns nothing.
func (m *Tables) Tune(ctx context.Context, now time.Time) (changes []Change, err error) {
	ctx, call := m.start(ctx, "timeseries.Tune")
	defer func() { end(ctx, call, len(changes), err) }()
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	if m.o.Cold.isZero() {
		return nil, nil
	}
	var old []string
	var ages []int
	for name, err := range m.list(ctx) {
		if err != nil {
			return nil, err
		}
		start, _ := m.r.Parse(name)
		if a := m.age(start, now); a > m.o.ColdAfter {
			old = append(old, name)
			ages = append(ages, a)
		}
	}
	var errs []error
	for i, name := range old {
		c, ok, err := m.tune(ctx, name)
		if err != nil {
			if ctx.Err() != nil {
				return changes, errors.Join(append(errs, err)...)
			}
			errs = append(errs, err)
			continue
		}
		if ok {
			c.Age = ages[i]
			changes = append(changes, c)
		}
	}
	return changes, errors.Join(errs...)
}

// tune dials one table down; ok is false when nothing needed doing.
func (m *Tables) tune(ctx context.Context, name string) (c Change, ok bool, err error) {
	d, err := observe.Do(ctx, m.c.DescribeTable, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		var nf *types.ResourceNotFoundException
		if errors.As(err, &nf) {
			return Change{}, false, nil // deleted since it was listed
		}
		return Change{}, false, &TableError{Table: name, Err: err}
	}
	t := d.Table
	if t == nil || t.TableStatus != types.TableStatusActive {
		return Change{}, false, nil
	}
	from := described(t)
	cold := m.o.Cold
	if from.OnDemand || (!cold.OnDemand && from.RCU <= cold.RCU && from.WCU <= cold.WCU) {
		return Change{}, false, nil
	}
	in := &dynamodb.UpdateTableInput{TableName: aws.String(name)}
	if cold.OnDemand {
		in.BillingMode = types.BillingModePayPerRequest
	} else {
		in.ProvisionedThroughput = &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(cold.RCU), WriteCapacityUnits: aws.Int64(cold.WCU)}
	}
	if _, err := observe.Do(ctx, m.c.UpdateTable, in); err != nil {
		var le *types.LimitExceededException
		if errors.As(err, &le) {
			err = fmt.Errorf("%w: %w", ErrDecreaseLimit, err)
		}
		return Change{}, false, &TableError{Table: name, Err: err}
	}
	c = Change{Table: name, From: from, To: cold}
	if !cold.OnDemand {
		m.model(&c)
	}
	return c, true, nil
}

// described returns a table description's throughput.
func described(t *types.TableDescription) Throughput {
	if t.BillingModeSummary != nil && t.BillingModeSummary.BillingMode == types.BillingModePayPerRequest {
		return Throughput{OnDemand: true}
	}
	var th Throughput
	if p := t.ProvisionedThroughput; p != nil {
		th.RCU = aws.ToInt64(p.ReadCapacityUnits)
		th.WCU = aws.ToInt64(p.WriteCapacityUnits)
	}
	if th.RCU == 0 && th.WCU == 0 {
		return Throughput{OnDemand: true}
	}
	return th
}

// model fills c's per-partition figures with package partition's model.
func (m *Tables) model(c *Change) {
	rcu, wcu := max(c.From.RCU, m.o.Hot.RCU), max(c.From.WCU, m.o.Hot.WCU)
	l, err := partition.NewLayout(float64(rcu), float64(wcu), 0)
	if err == nil {
		l, err = l.Provision(float64(c.To.RCU), float64(c.To.WCU))
	}
	if err != nil || l.Len() == 0 {
		c.Warning = fmt.Sprintf("no partition model: %v", err)
		return
	}
	c.Partitions = l.Len()
	c.PartitionRCU = l.Partitions[0].RCU
	c.PartitionWCU = l.MinWCU()
	switch {
	case c.PartitionWCU < WarnWCU && c.PartitionRCU < WarnRCU:
		c.Warning = fmt.Sprintf("%d partitions (from %d RCU/%d WCU) at %g RCU and %g WCU each, under %d RCU and %d WCU per partition", c.Partitions, rcu, wcu, c.PartitionRCU, c.PartitionWCU, WarnRCU, WarnWCU)
	case c.PartitionWCU < WarnWCU:
		c.Warning = fmt.Sprintf("%d partitions (from %d WCU) at %g WCU each, under %d WCU per partition", c.Partitions, wcu, c.PartitionWCU, WarnWCU)
	case c.PartitionRCU < WarnRCU:
		c.Warning = fmt.Sprintf("%d partitions (from %d RCU) at %g RCU each, under %d RCU per partition", c.Partitions, rcu, c.PartitionRCU, WarnRCU)
	}
}
