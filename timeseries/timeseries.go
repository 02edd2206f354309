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

// ErrBadName is returned by Router.Parse for a name the router did not make.
var ErrBadName = errors.New("timeseries: not a table name of this router")

// Router maps times to per-period table names. Its zero value is not
// usable: Prefix and Period are required. Periods are computed in UTC unless
// Location is set. A Router is a value and safe for concurrent use.
type Router struct {
	Prefix   string         // table names are Prefix + "_" + period label
	Period   Period         // Day, Week or Month
	Location *time.Location // nil means UTC
}

func (r Router) loc() *time.Location {
	if r.Location == nil {
		return time.UTC
	}
	return r.Location
}

// Start returns the first instant of the period holding t.
func (r Router) Start(t time.Time) time.Time {
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

// Next returns the first instant of the period after the one holding t.
func (r Router) Next(t time.Time) time.Time {
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

// Table returns the name of the table holding t.
func (r Router) Table(t time.Time) string {
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
func (r Router) Parse(name string) (time.Time, error) {
	label, ok := strings.CutPrefix(name, r.Prefix+"_")
	if !ok {
		return time.Time{}, fmt.Errorf("%w: %q lacks prefix %q", ErrBadName, name, r.Prefix+"_")
	}
	var start time.Time
	var err error
	switch r.Period {
	case Week:
		var y, w int
		if n, _ := fmt.Sscanf(label, "%04d-W%02d", &y, &w); n != 2 || w < 1 || w > 53 {
			return time.Time{}, fmt.Errorf("%w: %q", ErrBadName, name)
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
		return time.Time{}, fmt.Errorf("%w: %q", ErrBadName, name)
	}
	return start, nil
}

// Tables yields the names of the tables holding [from, to], oldest first,
// for reads that span periods. Nothing is yielded when to is before from.
func (r Router) Tables(from, to time.Time) iter.Seq[string] {
	return func(yield func(string) bool) {
		for t := r.Start(from); !t.After(to); t = r.Next(t) {
			if !yield(r.Table(t)) {
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
}

// Tables creates and retires a router's tables. Template describes every
// period's table (key schema, billing, indexes); its TableName is ignored.
// Safe for concurrent use.
type Tables struct {
	Router   Router
	Client   Client
	Template dynamodb.CreateTableInput
}

// Ensure creates the table holding now and those of the next ahead periods
// if they do not exist yet, so that writes at a period boundary never meet
// a table still being created. It returns the names it created. A table
// that already exists is not an error: several instances may run Ensure.
func (m *Tables) Ensure(ctx context.Context, now time.Time, ahead int) ([]string, error) {
	if ahead < 0 {
		return nil, fmt.Errorf("timeseries: ahead = %d, want >= 0", ahead)
	}
	var created []string
	t := m.Router.Start(now)
	for i := 0; i <= ahead; i++ {
		in := m.Template
		name := m.Router.Table(t)
		in.TableName = aws.String(name)
		_, err := m.Client.CreateTable(ctx, &in)
		var inUse *types.ResourceInUseException
		switch {
		case err == nil:
			created = append(created, name)
		case errors.As(err, &inUse):
		default:
			return created, fmt.Errorf("timeseries: create %s: %w", name, err)
		}
		t = m.Router.Next(t)
	}
	return created, nil
}

// List yields this router's tables that exist, in the order ListTables
// returns them (by name, which for one router is by time).
func (m *Tables) List(ctx context.Context) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		p := dynamodb.NewListTablesPaginator(m.Client, &dynamodb.ListTablesInput{
			ExclusiveStartTableName: aws.String(m.Router.Prefix + "_"),
		})
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				yield("", fmt.Errorf("timeseries: list tables: %w", err))
				return
			}
			for _, name := range out.TableNames {
				if _, err := m.Router.Parse(name); err != nil {
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
func (m *Tables) Retain(ctx context.Context, horizon time.Time) ([]string, error) {
	var doomed []string
	for name, err := range m.List(ctx) {
		if err != nil {
			return nil, err
		}
		start, _ := m.Router.Parse(name)
		if !m.Router.Next(start).After(horizon) {
			doomed = append(doomed, name)
		}
	}
	var deleted []string
	for _, name := range doomed {
		_, err := m.Client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
		var nf *types.ResourceNotFoundException
		if err != nil && !errors.As(err, &nf) {
			return deleted, fmt.Errorf("timeseries: delete %s: %w", name, err)
		}
		deleted = append(deleted, name)
	}
	return deleted, nil
}
