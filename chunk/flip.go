package chunk

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/attempts"
	"github.com/dynashard/dynashard/internal/backoff"
	"github.com/dynashard/dynashard/internal/parentio"
)

// This file is a Put's last step, the same for every medium: the
// conditional flip of the parent to the new version, and what each of its
// outcomes leaves behind.

// updateInput builds the parent update that makes this version current if
// the parent still holds the version read at the start (and the caller's
// condition holds). One expression builder names every placeholder.
func (w *write) updateInput() (*dynamodb.UpdateItemInput, error) {
	set, remove := w.parentUpdate()
	var update expression.UpdateBuilder
	for name, v := range set {
		update = update.Set(expression.NameNoDotSplit(name), expression.Value(v))
	}
	for _, name := range remove {
		update = update.Remove(expression.NameNoDotSplit(name))
	}
	cond := w.cur.condition()
	if w.cond.IsSet() {
		cond = cond.And(w.cond)
	}
	e, err := expression.NewBuilder().WithUpdate(update).WithCondition(cond).Build()
	if err != nil {
		return nil, err
	}
	return &dynamodb.UpdateItemInput{
		TableName:                 &w.s.parents,
		Key:                       w.key.item(),
		UpdateExpression:          e.Update(),
		ConditionExpression:       e.Condition(),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
	}, nil
}

// Retry policy of the parent update, which runs with the SDK's retries off
// (see commit).
const (
	flipAttempts  = 10
	flipBaseDelay = 25 * time.Millisecond
	flipMaxDelay  = time.Second
)

// info describes this write as committed.
func (w *write) info() Info {
	attrs := w.attrs
	if attrs == nil {
		attrs = map[string]types.AttributeValue{}
	}
	i := Info{
		Version: w.version, Size: w.size, StoredSize: w.stored, Chunks: w.chunks, SHA256: w.sum,
		Compression: w.enc, Created: w.start, Attributes: attrs, Object: w.object,
	}
	if w.s.guideWrites() {
		i.Guide, i.NoChecksum, i.Created = true, !w.s.opts.Guide.Checksum, time.Time{}
		if i.NoChecksum {
			i.SHA256 = [32]byte{}
		}
	}
	return i
}

// commit switches the parent to this version and decides every outcome.
//
// The update runs with the SDK's retries off, because after a lost
// response a retry fails its condition whether the first attempt applied or
// someone else won. Here every attempt is known: a condition failure with
// no attempt before it that may have applied is a clean loss (ErrConflict);
// after such an attempt (reset, 500, timeout) the parent is read to decide
// the outcome (see failed).
func (w *write) commit(ctx context.Context) (Info, error) {
	in, err := w.updateInput()
	if err == nil {
		err = w.readable()
	}
	if err == nil && w.s.beforeFlip != nil {
		err = w.s.beforeFlip(ctx)
	}
	if err != nil {
		w.abandon(ctx)
		return Info{}, fmt.Errorf("chunk: put %v: %w", w.key, err)
	}
	var unknown error // the last attempt that may have applied, if any
	for attempt := 0; ; attempt++ {
		if w.s.clock().After(w.deadline()) {
			return w.failed(ctx, unknown, fmt.Errorf("version %s is older than Grace/2 (%v): not committing it", w.version, w.s.opts.Grace/2))
		}
		err := w.flip(ctx, in)
		switch classifyFlip(err) {
		case flipApplied:
			w.dropPrevious(ctx)
			return w.info(), nil
		case flipRefused:
			return w.refused(ctx, unknown, err)
		case flipRejected:
			return w.failed(ctx, unknown, err)
		case flipUnknown:
			unknown = err
		}
		if err := w.pause(ctx, attempt, err); err != nil {
			return w.failed(ctx, unknown, err)
		}
	}
}

// readable refuses a flip to a parent that its readers would refuse as
// corrupt (sizes that contradict each other or the chunk count): a last
// check against a fault in how the payload was cut or compressed, which
// would otherwise replace a readable payload by an unreadable one.
func (w *write) readable() error {
	p := parent{Info: Info{Size: w.size, StoredSize: w.stored, Chunks: w.chunks, Compression: w.enc, Object: w.object}, inline: w.inline}
	if !w.s.guideWrites() && w.chunks > 0 && w.inline == nil && w.object == "" {
		p.chunkSize = int64(w.s.opts.ChunkSize)
	}
	if why := p.contradiction(); why != "" {
		return fmt.Errorf("not storing version %s, which readers would refuse: %s", w.version, why)
	}
	return nil
}

// deadline is when the version turns Grace/2 old. No attempt may start
// after it: Sweep deletes versions older than Grace that are not current,
// and must never race a late switch to one.
func (w *write) deadline() time.Time { return w.start.Add(w.s.opts.Grace / 2) }

// flip sends the parent update once, with the SDK's retries off, cut off at
// the deadline.
func (w *write) flip(ctx context.Context, in *dynamodb.UpdateItemInput) error {
	ctx, cancel := context.WithTimeout(ctx, w.deadline().Sub(w.s.clock()))
	defer cancel()
	_, err := parentio.UpdateItem(ctx, w.s.c, in, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	return err
}

// flipResult is what one parent update's error says about its effect.
type flipResult int

const (
	flipApplied   flipResult = iota // success
	flipRefused                     // the condition failed: not applied
	flipRejected                    // another refusal (validation, permissions): not applied, never will be
	flipThrottled                   // throttled: not applied, worth retrying
	flipUnknown                     // no answer or a server fault: may have applied
)

func classifyFlip(err error) flipResult {
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return flipApplied
	case errors.As(err, &ccf):
		return flipRefused
	case backoff.IsThrottle(err):
		return flipThrottled
	case attempts.Refused(err):
		return flipRejected
	}
	return flipUnknown
}

// retryables is the SDK's own test of whether a failed request is worth
// sending again (a reset connection, a 5xx, a throttle); throttles are told
// apart by backoff.IsThrottle.
var retryables = retry.IsErrorRetryables(retry.DefaultRetryables)

// pause waits before the attempt after attempt, which failed with err:
// full jitter over a capped exponential delay (package backoff, as the
// batch engine waits). It returns the error to give up with instead: err
// if ctx is done, err is not worth retrying (the SDK's
// retry.DefaultRetryables) or the attempts are spent; ctx's error if ctx
// ends while waiting.
func (w *write) pause(ctx context.Context, attempt int, err error) error {
	if ctx.Err() != nil || retryables.IsErrorRetryable(err) != aws.TrueTernary || attempt+1 == flipAttempts {
		return err
	}
	d := backoff.Jitter(backoff.Cap(cmp.Or(w.s.flipDelay, flipBaseDelay), flipMaxDelay, attempt)) + time.Millisecond
	if !backoff.Sleep(ctx, nil, d) {
		return ctx.Err()
	}
	return nil
}

// refused ends a commit whose condition failed. If no earlier attempt may
// have applied, we never won and the condition cannot hold again: the
// chunks are garbage and the Put lost.
func (w *write) refused(ctx context.Context, unknown, err error) (Info, error) {
	if unknown != nil {
		return w.failed(ctx, unknown, err)
	}
	w.abandon(ctx)
	switch {
	case w.cond.IsSet():
		return Info{}, fmt.Errorf("%w: put %v: the parent changed first or the caller's condition failed", ErrConflict, w.key)
	case w.cur.exists:
		return Info{}, fmt.Errorf("%w: put %v: version %s was replaced first", ErrConflict, w.key, w.cur.version)
	}
	return Info{}, fmt.Errorf("%w: put %v: another write stored a payload first", ErrConflict, w.key)
}

// failed ends a commit without a success response, err being the last
// failure. If no attempt may have applied (unknown is nil), the chunks go
// and err is returned. Otherwise the parent is read to decide the outcome.
func (w *write) failed(ctx context.Context, unknown, err error) (Info, error) {
	if unknown == nil {
		w.abandon(ctx)
		return Info{}, fmt.Errorf("chunk: put %v: updating parent: %w", w.key, err)
	}
	if ctx.Err() != nil {
		return Info{}, fmt.Errorf("chunk: put %v: outcome unknown: %w", w.key, ctx.Err())
	}
	now, rerr := w.reread(ctx)
	if rerr != nil {
		return Info{}, fmt.Errorf("chunk: put %v: outcome unknown: %w", w.key, errors.Join(unknown, rerr))
	}
	return w.outcome(ctx, now, unknown)
}

// outcome decides a commit from the parent as read after an attempt that
// may have applied: our version there, or recorded as the one its successor
// replaced (ChunkPrevious), means we won.
func (w *write) outcome(ctx context.Context, now current, unknown error) (Info, error) {
	switch {
	case now.holds(w.version):
		w.dropPrevious(ctx)
		return w.info(), nil
	case now.exists && now.prev == w.version:
		// A later write has already replaced ours: just a later write.
		return w.info(), nil
	case w.cur.exists && !now.holds(w.cur.version):
		// The parent moved past the version we started from, which never
		// comes back, so no attempt of ours can still apply. (An absent
		// parent can become absent again after a Delete, so that case
		// leaves the chunks to Sweep.)
		w.abandon(ctx)
	}
	return Info{}, fmt.Errorf("chunk: put %v: outcome unknown (the parent holds %s): %w", w.key, describeVersion(now), unknown)
}

// reread reads the parent consistently, retrying a little, to decide an
// ambiguous outcome.
func (w *write) reread(ctx context.Context) (current, error) {
	var err error
	for range 3 {
		var c current
		if c, err = w.s.readCurrent(ctx, w.key); err == nil || ctx.Err() != nil {
			return c, err
		}
	}
	return current{}, err
}
