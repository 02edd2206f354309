// Package observe is dynashard's one seam between its logical calls and
// what a user watches: the capacity DynamoDB reports for a call's requests
// (a Tally, carried by the context: dynashard.WithUsage), a span per
// logical call and metrics (through the smithy-go TracerProvider and
// MeterProvider set on the SDK client the call uses).
//
// Every request a package sends goes through [Do]; every public entry
// point opens a [Call] with [Scope.Start]. With no Tally in the context
// and no provider on the client, Start returns the context unchanged and
// Do costs one context lookup: nothing is allocated and no capacity is
// asked for.
package observe

import (
	"maps"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Capacity is read and write capacity units.
type Capacity struct {
	Read, Write float64
}

func (c *Capacity) add(d Capacity) { c.Read += d.Read; c.Write += d.Write }

// Tally totals what DynamoDB reported for the requests of the calls made
// with a context that carries it. Safe for concurrent use; the zero value
// is empty.
type Tally struct {
	mu          sync.Mutex
	tables      map[string]*tableTally
	requests    int64
	throttled   int64
	unprocessed int64
}

type tableTally struct {
	all     Capacity
	indexes map[string]Capacity
}

// Report is a copy of a Tally's figures.
type Report struct {
	Requests, Throttled, Unprocessed int64
	Tables                           map[string]Capacity            // table and indexes together
	Indexes                          map[string]map[string]Capacity // table → index → units
}

// Report returns a copy of the figures so far.
func (t *Tally) Report() Report {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := Report{Requests: t.requests, Throttled: t.throttled, Unprocessed: t.unprocessed,
		Tables: make(map[string]Capacity, len(t.tables)), Indexes: map[string]map[string]Capacity{}}
	for name, tt := range t.tables {
		r.Tables[name] = tt.all
		if len(tt.indexes) > 0 {
			r.Indexes[name] = maps.Clone(tt.indexes)
		}
	}
	return r
}

// Reset forgets every figure.
func (t *Tally) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tables, t.requests, t.throttled, t.unprocessed = nil, 0, 0, 0
}

// sample is what one request reported.
type sample struct {
	table     string // the request's table, if it names one
	capacity  []types.ConsumedCapacity
	read      bool // a read request: units without a kind are read units
	throttled int64
	unproc    int64
}

func (t *Tally) add(s *sample) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.requests++
	t.throttled += s.throttled
	t.unprocessed += s.unproc
	for _, cc := range s.capacity {
		name := aws.ToString(cc.TableName)
		if name == "" {
			continue
		}
		if t.tables == nil {
			t.tables = map[string]*tableTally{}
		}
		tt := t.tables[name]
		if tt == nil {
			tt = &tableTally{}
			t.tables[name] = tt
		}
		tt.all.add(units(cc.CapacityUnits, cc.ReadCapacityUnits, cc.WriteCapacityUnits, s.read))
		for _, m := range []map[string]types.Capacity{cc.GlobalSecondaryIndexes, cc.LocalSecondaryIndexes} {
			for index, c := range m {
				if tt.indexes == nil {
					tt.indexes = map[string]Capacity{}
				}
				u := tt.indexes[index]
				u.add(units(c.CapacityUnits, c.ReadCapacityUnits, c.WriteCapacityUnits, s.read))
				tt.indexes[index] = u
			}
		}
	}
}

// units splits DynamoDB's figures into read and write units: by the
// figures DynamoDB gave per kind if it gave any, else by the request's
// kind.
func units(total, read, write *float64, isRead bool) Capacity {
	if read != nil || write != nil {
		return Capacity{Read: aws.ToFloat64(read), Write: aws.ToFloat64(write)}
	}
	if isRead {
		return Capacity{Read: aws.ToFloat64(total)}
	}
	return Capacity{Write: aws.ToFloat64(total)}
}
