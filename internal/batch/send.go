package batch

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/dynashard/dynashard/internal/attempts"
	"github.com/dynashard/dynashard/internal/observe"
)

// countAttempts adds a middleware that counts HTTP attempts: it sits after
// the SDK's retry middleware, so it runs once per attempt.
func countAttempts(n *atomic.Int64) func(*dynamodb.Options) {
	mw := middleware.FinalizeMiddlewareFunc("dynashard/batch/attempts",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			n.Add(1)
			return next.HandleFinalize(ctx, in)
		})
	return func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
			return s.Finalize.Add(mw, middleware.After)
		})
	}
}

// errUnmatched reports a response entry that matches no entry sent, which
// would make "exactly what was not done" unknowable.
var errUnmatched = errors.New("batch: server returned an unprocessed entry that was not in the request")

// matcher finds the sent entry a returned one stands for.
type matcher struct {
	byFP map[string]*job
}

func newMatcher(batch []*job) matcher {
	m := matcher{byFP: make(map[string]*job, len(batch))}
	for _, j := range batch {
		m.byFP[j.fp] = j
	}
	return m
}

func (m matcher) take(fp string) (*job, bool) {
	j, ok := m.byFP[fp]
	if ok {
		delete(m.byFP, fp) // a second copy of one entry is a server bug, not a leftover
	}
	return j, ok
}

// sendVia sends in through op: through observe.Do (which asks for and
// records the consumed capacity when ctx belongs to an observed call),
// unless the client observes its own requests (Options.ClientObserves).
func sendVia[I, O any](ctx context.Context, op observe.Op[I, O], in *I, opts Options, optFns ...func(*dynamodb.Options)) (*O, error) {
	if opts.ClientObserves {
		return op(ctx, in, optFns...)
	}
	return observe.Do(ctx, op, in, optFns...)
}

func writeSender(c WriteAPI, opts Options) sender {
	return func(ctx context.Context, batch []*job) outcome {
		in := &dynamodb.BatchWriteItemInput{RequestItems: make(map[string][]types.WriteRequest)}
		for _, j := range batch {
			var wr types.WriteRequest
			if len(j.write.Put) > 0 {
				wr.PutRequest = &types.PutRequest{Item: j.write.Put}
			} else {
				wr.DeleteRequest = &types.DeleteRequest{Key: j.write.Delete}
			}
			in.RequestItems[j.table] = append(in.RequestItems[j.table], wr)
		}
		var a attempts.Counter
		out, err := sendVia(ctx, c.BatchWriteItem, in, opts, a.Option)
		sent, _ := a.Counts()
		res := outcome{attempts: sent, err: err, unsure: a.MaybeApplied()}
		var pe *PartialError
		if errors.As(err, &pe) {
			return partialOutcome(res, batch, pe, opts)
		}
		if err != nil || len(out.UnprocessedItems) == 0 {
			return res
		}
		m := newMatcher(batch)
		left, ok := m.takeWrites(out.UnprocessedItems, opts)
		if !ok {
			return unmatched(res)
		}
		res.left = left
		return res
	}
}

// partialOutcome is the outcome of a request that a wrapping client
// settled itself (PartialError).
func partialOutcome(res outcome, batch []*job, pe *PartialError, opts Options) outcome {
	res.err, res.settled, res.why = pe.Err, true, pe.Abandoned
	m := newMatcher(batch)
	var ok1, ok2 bool
	res.left, ok1 = m.takeWrites(pe.Unprocessed, opts)
	res.late, ok2 = m.takeWrites(pe.Unknown, opts)
	if !ok1 || !ok2 {
		return unmatched(res)
	}
	if res.why == nil && len(res.late) > 0 {
		res.why = errAbandoned
	}
	return res
}

// unmatched is the outcome of a response that names an entry the request
// did not hold: which entries were done is unknown.
func unmatched(res outcome) outcome {
	return outcome{attempts: res.attempts, err: errUnmatched, unsure: true}
}

var errAbandoned = errors.New("batch: requests abandoned by the client")

// takeWrites takes the sent entries that the write requests of wrs stand
// for; false if one stands for none.
func (m matcher) takeWrites(wrs map[string][]types.WriteRequest, opts Options) ([]*job, bool) {
	var js []*job
	for table, list := range wrs {
		names := opts.KeyAttributes[table]
		for _, wr := range list {
			var fp string
			switch {
			case wr.PutRequest != nil:
				fp = fingerprint(table, wr.PutRequest.Item, names)
			case wr.DeleteRequest != nil:
				fp = fingerprint(table, wr.DeleteRequest.Key, names)
			}
			j, ok := m.take(fp)
			if !ok {
				return nil, false
			}
			js = append(js, j)
		}
	}
	return js, true
}

func getSender(c GetAPI, opts Options) sender {
	return func(ctx context.Context, batch []*job) outcome {
		in := &dynamodb.BatchGetItemInput{RequestItems: make(map[string]types.KeysAndAttributes)}
		for _, j := range batch {
			ka, ok := in.RequestItems[j.table]
			if !ok {
				if opts.ConsistentRead {
					ka.ConsistentRead = aws.Bool(true)
				}
				if p, ok := opts.Projections[j.table]; ok && p.Expression != "" {
					ka.ProjectionExpression = aws.String(p.Expression)
					ka.ExpressionAttributeNames = p.Names
				}
			}
			ka.Keys = append(ka.Keys, j.key.Key)
			in.RequestItems[j.table] = ka
		}
		var attempts atomic.Int64
		out, err := sendVia(ctx, c.BatchGetItem, in, opts, countAttempts(&attempts))
		res := outcome{attempts: int(attempts.Load()), err: err}
		if err != nil {
			return res
		}
		for table, items := range out.Responses {
			for _, it := range items {
				res.items = append(res.items, Item{Table: table, Item: it})
			}
		}
		if len(out.UnprocessedKeys) == 0 {
			return res
		}
		m := newMatcher(batch)
		for table, ka := range out.UnprocessedKeys {
			names := opts.KeyAttributes[table]
			for _, k := range ka.Keys {
				j, ok := m.take(fingerprint(table, k, names))
				if !ok {
					// Which keys were read is unknown: report them all
					// unread and drop the items, so no key is both.
					return outcome{attempts: res.attempts, err: errUnmatched}
				}
				res.left = append(res.left, j)
			}
		}
		return res
	}
}
