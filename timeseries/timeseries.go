package timeseries

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/errs"
	"github.com/dynashard/dynashard/internal/observe"
)

// Period is the span of time one table holds.
type Period int

// Periods. Weeks are ISO 8601 weeks (Monday first), named by ISO year.
const (
	Day Period = iota + 1
	Week
	Month
)

func (p Period) String() string {
	switch p {
	case Day:
		return "day"
	case Week:
		return "week"
	case Month:
		return "month"
	}
	return "Period(" + strconv.Itoa(int(p)) + ")"
}

func (p Period) valid() bool { return p >= Day && p <= Month }

// labelLen is the length of p's period labels (for years 0 to 9999).
func (p Period) labelLen() int {
	switch p {
	case Week:
		return len("2006-W01")
	case Month:
		return len("2006-01")
	}
	return len("2006-01-02")
}

var (
	// ErrInvalid is matched by every error about input that cannot work,
	// returned before any request: a Router whose Period is not Day, Week
	// or Month or whose Prefix cannot start a table name (see
	// Router.Check), a nil ctx or Client, a negative ahead. The error names
	// it. It is the same value as shard.ErrInvalid and dynashard.ErrInvalid.
	ErrInvalid = errs.Invalid
	// ErrInvalidName is returned by Router.Parse for a name the router did
	// not make. It matches ErrInvalid.
	ErrInvalidName = errs.New("timeseries: not a table name of this router", errs.Invalid)
)

// maxTableName is DynamoDB's longest table name.
const maxTableName = 255

// Router maps times to per-period table names. Its zero value is not
// usable: Prefix and Period are required (see Check). Periods are computed
// in UTC unless Location is set. A Router is a value and safe for
// concurrent use.
//
// Parse and the methods of Tables fail with ErrInvalid for a Router that
// fails Check. The methods that cannot return an error do not fall back on
// some other period: for a Period other than Day, Week or Month, Start and
// Next return the zero Time; for any Router failing Check, Table returns ""
// and Tables yields nothing.
type Router struct {
	Prefix   string         // table names are Prefix + "_" + period label
	Period   Period         // Day, Week or Month
	Location *time.Location // nil means UTC
}

// Check returns an error wrapping ErrInvalid if r cannot name tables: its
// Period is not Day, Week or Month, or its Prefix is empty, holds a
// character DynamoDB refuses in a table name (only a-z, A-Z, 0-9, '_', '-'
// and '.' are allowed), or makes names longer than 255 bytes.
func (r Router) Check() error {
	if !r.Period.valid() {
		return fmt.Errorf("%w: router %q: Period = %d, want Day (%d), Week (%d) or Month (%d)", ErrInvalid, r.Prefix, int(r.Period), Day, Week, Month)
	}
	if r.Prefix == "" {
		return fmt.Errorf("%w: router of %vs: empty Prefix", ErrInvalid, r.Period)
	}
	for i := 0; i < len(r.Prefix); i++ {
		if c := r.Prefix[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return fmt.Errorf("%w: Prefix %q: byte %q at %d is not allowed in a table name", ErrInvalid, r.Prefix, c, i)
		}
	}
	if n := len(r.Prefix) + 1 + r.Period.labelLen(); n > maxTableName {
		return fmt.Errorf("%w: Prefix of %d bytes makes %s table names of %d bytes, over DynamoDB's %d", ErrInvalid, len(r.Prefix), r.Period, n, maxTableName)
	}
	return nil
}

func (r Router) loc() *time.Location {
	if r.Location == nil {
		return time.UTC
	}
	return r.Location
}

// Start returns the first instant of the period holding t; the zero Time
// if r's Period is not Day, Week or Month.
func (r Router) Start(t time.Time) time.Time {
	if !r.Period.valid() {
		return time.Time{}
	}
	t = t.In(r.loc())
	y, m, d := t.Date()
	switch r.Period {
	case Week:
		wd := (int(t.Weekday()) + 6) % 7 // Monday = 0
		return time.Date(y, m, d-wd, 0, 0, 0, 0, r.loc())
	case Month:
		return time.Date(y, m, 1, 0, 0, 0, 0, r.loc())
	default:
		return time.Date(y, m, d, 0, 0, 0, 0, r.loc())
	}
}

// Next returns the first instant of the period after the one holding t;
// the zero Time if r's Period is not Day, Week or Month.
func (r Router) Next(t time.Time) time.Time {
	if !r.Period.valid() {
		return time.Time{}
	}
	s := r.Start(t)
	switch r.Period {
	case Week:
		return s.AddDate(0, 0, 7)
	case Month:
		return s.AddDate(0, 1, 0)
	default:
		return s.AddDate(0, 0, 1)
	}
}

// Table returns the name of the table holding t; "" if r fails Check.
func (r Router) Table(t time.Time) string {
	if r.Check() != nil {
		return ""
	}
	return r.table(t)
}

// table is Table for a Router known to pass Check.
func (r Router) table(t time.Time) string {
	return r.Prefix + "_" + r.label(r.Start(t))
}

func (r Router) label(start time.Time) string {
	switch r.Period {
	case Week:
		y, w := start.ISOWeek()
		return fmt.Sprintf("%04d-W%02d", y, w)
	case Month:
		return start.Format("2006-01")
	default:
		return start.Format("2006-01-02")
	}
}

// Parse returns the start of the period a table name of this router holds.
// It fails with ErrInvalid if r fails Check, and with ErrInvalidName for a name
// r does not make.
func (r Router) Parse(name string) (time.Time, error) {
	if err := r.Check(); err != nil {
		return time.Time{}, err
	}
	label, ok := strings.CutPrefix(name, r.Prefix+"_")
	if !ok {
		return time.Time{}, fmt.Errorf("%w: %q lacks prefix %q", ErrInvalidName, name, r.Prefix+"_")
	}
	var start time.Time
	var err error
	switch r.Period {
	case Week:
		var y, w int
		if n, _ := fmt.Sscanf(label, "%04d-W%02d", &y, &w); n != 2 || w < 1 || w > 53 {
			return time.Time{}, fmt.Errorf("%w: %q", ErrInvalidName, name)
		}
		// ISO week 1 holds January 4th.
		start = r.Start(time.Date(y, 1, 4, 0, 0, 0, 0, r.loc())).AddDate(0, 0, 7*(w-1))
	case Month:
		start, err = time.ParseInLocation("2006-01", label, r.loc())
	default:
		start, err = time.ParseInLocation("2006-01-02", label, r.loc())
	}
	// Only the canonical spelling is ours: "2026-W60" or "2026-1" are not.
	if err != nil || r.label(start) != label {
		return time.Time{}, fmt.Errorf("%w: %q", ErrInvalidName, name)
	}
	return start, nil
}

// Tables yields the names of the tables holding [from, to], oldest first,
// for reads that span periods. Nothing is yielded when to is before from,
// or when r fails Check.
func (r Router) Tables(from, to time.Time) iter.Seq[string] {
	return func(yield func(string) bool) {
		if r.Check() != nil {
			return
		}
		for t := r.Start(from); !t.After(to); t = r.Next(t) {
			if !yield(r.table(t)) {
				return
			}
		}
	}
}

// Client is the part of *dynamodb.Client that Tables uses.
type Client interface {
	CreateTable(context.Context, *dynamodb.CreateTableInput, ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DeleteTable(context.Context, *dynamodb.DeleteTableInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteTableOutput, error)
	ListTables(context.Context, *dynamodb.ListTablesInput, ...func(*dynamodb.Options)) (*dynamodb.ListTablesOutput, error)
	DescribeTable(context.Context, *dynamodb.DescribeTableInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	UpdateTable(context.Context, *dynamodb.UpdateTableInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error)
}

// Tables creates and retires a router's tables. Create it with New; the
// methods of a zero Tables (or a nil *Tables) send nothing and fail with an
// error matching ErrInvalid. Safe for concurrent use.
type Tables struct {
	c        Client
	r        Router
	template dynamodb.CreateTableInput
	o        Options
	obs      *observe.Scope // the client's tracer and meter; nil: none
}

var _ Client = (*dynamodb.Client)(nil)

// New returns Tables for router r through client c. template describes
// every period's table (key schema, billing, indexes); its TableName is
// ignored. optFns set the per-period throughput (see Options; none keeps
// today's behaviour). It returns an error matching ErrInvalid for a nil
// client, a nil template, a Router that fails Check or Options that fail
// their rules, and sends no request.
func New(c Client, r Router, template *dynamodb.CreateTableInput, optFns ...func(*Options)) (*Tables, error) {
	switch {
	case errs.IsNil(c):
		return nil, fmt.Errorf("%w: timeseries.New: nil client", ErrInvalid)
	case template == nil:
		return nil, fmt.Errorf("%w: router %q: nil template", ErrInvalid, r.Prefix)
	}
	if err := r.Check(); err != nil {
		return nil, err
	}
	var o Options
	for _, f := range optFns {
		if f != nil {
			f(&o)
		}
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	return &Tables{c: c, r: r, template: *template, o: o, obs: observe.For(c)}, nil
}

// Router returns the router the Tables serve: the zero Router for a zero
// or nil Tables.
func (m *Tables) Router() Router {
	if m == nil {
		return Router{}
	}
	return m.r
}

// attrPrefix is the span attribute of the router's Prefix: a call of
// Tables acts on several tables, named Prefix_<period>.
const attrPrefix = "dynashard.timeseries.prefix"

// start opens the logical call op ("timeseries.Ensure": span
// "dynashard.timeseries.Ensure"; a constant, so that an unobserved call
// allocates nothing), with the router's prefix as attribute. Tables not made by New, or a
// nil ctx, which check refuses, are no observed call.
func (m *Tables) start(ctx context.Context, op string) (context.Context, observe.Call) {
	if m == nil || ctx == nil {
		return ctx, observe.Call{}
	}
	ctx, call := m.obs.Start(ctx, op)
	if call.Traced() {
		call.SetString(attrPrefix, m.r.Prefix)
	}
	return ctx, call
}

// end closes call with err and the tables it acted on.
func end(ctx context.Context, call observe.Call, n int, err error) {
	call.SetInt(observe.AttrItems, n)
	call.End(ctx, err)
}

// check validates the Tables and ctx before any request.
func (m *Tables) check(ctx context.Context) error {
	switch {
	case m == nil || m.c == nil:
		return fmt.Errorf("%w: timeseries: Tables not made by New (zero value or nil)", ErrInvalid)
	case ctx == nil:
		return fmt.Errorf("%w: nil ctx", ErrInvalid)
	}
	return nil
}

// Ensure creates the table holding now and those of the next ahead periods
// if they do not exist yet, so that writes at a period boundary never meet
// a table still being created. It returns the names it created. The
// tables of the first Options.HotPeriods periods (now's and the next, by
// default) are created with Options.Hot, the others as the template says.
// A table that already exists is left as it is, not an error: several
// instances may run Ensure. A
// negative ahead fails with ErrInvalid, as does an invalid Tables.
func (m *Tables) Ensure(ctx context.Context, now time.Time, ahead int) (created []string, err error) {
	ctx, call := m.start(ctx, "timeseries.Ensure")
	defer func() { end(ctx, call, len(created), err) }()
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	if ahead < 0 {
		return nil, fmt.Errorf("%w: ahead = %d, want >= 0", ErrInvalid, ahead)
	}
	t := m.r.Start(now)
	for i := 0; i <= ahead; i++ {
		in := m.template
		if i < m.o.hotPeriods() {
			in = m.hot(in)
		}
		name := m.r.table(t)
		in.TableName = aws.String(name)
		_, err := observe.Do(ctx, m.c.CreateTable, &in)
		var inUse *types.ResourceInUseException
		switch {
		case err == nil:
			created = append(created, name)
		case errors.As(err, &inUse):
		default:
			return created, fmt.Errorf("timeseries: create %s: %w", name, err)
		}
		t = m.r.Next(t)
	}
	return created, nil
}

// List yields this router's tables that exist, in the order ListTables
// returns them (by name, which for one router is by time). An error ends
// the sequence as its last pair; for an invalid Tables it is the only one.
func (m *Tables) List(ctx context.Context) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		ctx, call := m.start(ctx, "timeseries.List")
		n := 0
		var err error
		defer func() { end(ctx, call, n, err) }()
		for name, lerr := range m.list(ctx) {
			if lerr != nil {
				err = lerr
				yield("", err)
				return
			}
			n++
			if !yield(name, nil) {
				return
			}
		}
	}
}

// lister sends ListTables through observe.Do, for the SDK's paginator.
type lister struct{ c Client }

func (l lister) ListTables(ctx context.Context, in *dynamodb.ListTablesInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ListTablesOutput, error) {
	return observe.Do(ctx, l.c.ListTables, in, optFns...)
}

// list is List within the caller's logical call.
func (m *Tables) list(ctx context.Context) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		if err := m.check(ctx); err != nil {
			yield("", err)
			return
		}
		in := &dynamodb.ListTablesInput{}
		// DynamoDB takes a start name of 3 bytes or more; a shorter one
		// (a 1-byte prefix) lists from the beginning instead.
		if start := m.r.Prefix + "_"; len(start) >= 3 {
			in.ExclusiveStartTableName = aws.String(start)
		}
		p := dynamodb.NewListTablesPaginator(lister{m.c}, in)
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				yield("", fmt.Errorf("timeseries: list tables: %w", err))
				return
			}
			for _, name := range out.TableNames {
				if _, err := m.r.Parse(name); err != nil {
					continue // another router's or someone else's table
				}
				if !yield(name, nil) {
					return
				}
			}
		}
	}
}

// Retain deletes every table of this router whose whole period ended before
// horizon, and returns their names. The table holding horizon is kept.
func (m *Tables) Retain(ctx context.Context, horizon time.Time) (deleted []string, err error) {
	ctx, call := m.start(ctx, "timeseries.Retain")
	defer func() { end(ctx, call, len(deleted), err) }()
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	var doomed []string
	for name, err := range m.list(ctx) {
		if err != nil {
			return nil, err
		}
		start, _ := m.r.Parse(name)
		if !m.r.Next(start).After(horizon) {
			doomed = append(doomed, name)
		}
	}
	for _, name := range doomed {
		_, err := observe.Do(ctx, m.c.DeleteTable, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
		var nf *types.ResourceNotFoundException
		if err != nil && !errors.As(err, &nf) {
			return deleted, fmt.Errorf("timeseries: delete %s: %w", name, err)
		}
		deleted = append(deleted, name)
	}
	return deleted, nil
}
