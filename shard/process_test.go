package shard_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/scatter"
	"github.com/dynashard/dynashard/shard"
)

// Tests of the protocol across processes (issue 30's classes), in one
// test process: each "process" is a client without an Options method,
// which dynashard treats as a database of its own per client value, so
// that it has a history cache of its own, as another OS process would.
// The multi-process checker (mproc tests) runs real processes.

// process is one simulated process's client. beforeUpdate, if set, is
// called before each UpdateItem with its ordinal (from 1); an error it
// returns is the UpdateItem's, and the request is not sent.
type process struct {
	shard.Client
	beforeUpdate func(k int) error
	mu           sync.Mutex
	updates      int
}

func (p *process) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	p.mu.Lock()
	p.updates++
	k := p.updates
	p.mu.Unlock()
	if p.beforeUpdate != nil {
		if err := p.beforeUpdate(k); err != nil {
			return nil, err
		}
	}
	return p.Client.UpdateItem(ctx, in, optFns...)
}

// tableIn returns a Table of a simulated process of its own, with the
// layout's HistoryTTL set to ttl.
func tableIn(t *testing.T, p *process, name string, s shard.Strategy, ttl time.Duration) *shard.Table[Order] {
	t.Helper()
	l := layoutOf(name, s)
	l.HistoryTTL = ttl
	tbl, err := shard.NewTable[Order](p, l)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// waitPending polls base's record through a fresh process until its
// last count is pending.
func waitPending(t *testing.T, s *ddbtest.Server, name, base string) {
	t.Helper()
	c := s.Client()
	for {
		out, err := c.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(name), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: base + "#dynashard"}, "sk": &types.AttributeValueMemberS{Value: "dynashard#layout"}}})
		if err != nil {
			t.Fatal(err)
		}
		if p, ok := out.Item["dynashard:pending"].(*types.AttributeValueMemberBOOL); ok && p.Value {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPausedRebalance (class 1): a Rebalance paused after its first
// suffix, while another process rebalances, reshards back and
// rebalances again, must not move an item to a key no history covers
// when it resumes.
func TestPausedRebalance(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		name := s.Table(t, "pk:S", "sk:S")
		a := tableIn(t, &process{Client: s.Client()}, name, shard.Hash(2), 50*time.Millisecond)
		b := tableIn(t, &process{Client: s.Client()}, name, shard.Hash(2), 50*time.Millisecond)
		const items = 60
		for i := range items {
			if err := again(func() error { return b.Put(ctx, "day", Order{ID: fmt.Sprint("o", i), Amount: i}) }); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := b.Reshard(ctx, "day", 4); err != nil {
			t.Fatal(err)
		}
		paused, resume := make(chan struct{}), make(chan struct{})
		var once sync.Once
		done := make(chan error, 1)
		go func() {
			_, err := a.Rebalance(ctx, "day", func(o *shard.RebalanceOptions) {
				o.Wait = -1
				o.OnProgress = func(shard.RebalanceProgress) {
					once.Do(func() { close(paused); <-resume })
				}
			})
			done <- err
		}()
		<-paused
		if _, err := b.Rebalance(ctx, "day", func(o *shard.RebalanceOptions) { o.Wait = -1 }); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Reshard(ctx, "day", 2); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Rebalance(ctx, "day", func(o *shard.RebalanceOptions) { o.Wait = -1 }); err != nil {
			t.Fatal(err)
		}
		close(resume)
		if err := <-done; err != nil && !errors.Is(err, shard.ErrConflict) {
			t.Fatalf("the resumed Rebalance: %v, want nil or ErrConflict", err)
		}
		checkAll(t, s, name, items)
	})
}

// checkAll reads every item o0..o(n-1) of base "day" through a fresh
// process, by Get and by a scatter read, and wants each once.
func checkAll(t *testing.T, s *ddbtest.Server, name string, n int) {
	t.Helper()
	ctx := context.Background()
	c := &process{Client: s.Client()}
	fresh := tableIn(t, c, name, shard.Hash(2), -1)
	missing := 0
	for i := range n {
		if err := again(func() error { _, err := fresh.Get(ctx, "day", fmt.Sprint("o", i)); return err }); err != nil {
			missing++
			if !errors.Is(err, shard.ErrNotFound) {
				t.Fatal(err)
			}
		}
	}
	if missing > 0 {
		h, _ := fresh.Shards(ctx, "day")
		t.Errorf("%d of %d items not found by Get (history %v)", missing, n, h)
	}
	l := layoutOf(name, shard.Hash(2))
	l.HistoryTTL = -1
	sc, err := scatter.New(s.Client(), l)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for item, err := range sc.All(ctx, "day") {
		if err != nil {
			t.Fatal(err)
		}
		seen[item.Attrs["sk"].(*types.AttributeValueMemberS).Value]++
	}
	if len(seen) != n {
		t.Errorf("scatter read %d distinct items, want %d", len(seen), n)
	}
	for id, k := range seen {
		if k != 1 {
			t.Errorf("scatter read %s %d times", id, k)
		}
	}
}

// TestMixedHistoryTTL (class 2): a process with a short HistoryTTL must
// not make a pending count the writers' before a process with a longer
// one stops writing under the old count.
func TestMixedHistoryTTL(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		name := s.Table(t, "pk:S", "sk:S")
		const slow, quick = 10 * time.Second, 100 * time.Millisecond
		a := tableIn(t, &process{Client: s.Client()}, name, shard.Hash(2), slow)
		r := tableIn(t, &process{Client: s.Client()}, name, shard.Hash(2), slow)
		b := tableIn(t, &process{Client: s.Client()}, name, shard.Hash(2), quick)
		id := idMoving(2, 4, 0)
		if err := again(func() error { return a.Put(ctx, "day", Order{ID: id, Amount: 1}) }); err != nil {
			t.Fatal(err)
		}
		// r announces 4 and is stopped before it activates it.
		rctx, stop := context.WithCancel(ctx)
		go func() { _, _ = r.Reshard(rctx, "day", 4) }()
		waitPending(t, s, name, "day")
		stop()
		if err := again(func() error { _, err := b.Get(ctx, "day", id); return err }); err != nil { // b sees 4 pending
			t.Fatal(err)
		}
		time.Sleep(2 * (quick + time.Second)) // past b's own fence, not a's
		if err := again(func() error { return b.Put(ctx, "day", Order{ID: id, Amount: 2}) }); err != nil {
			t.Fatal(err)
		}
		if err := again(func() error { return a.Put(ctx, "day", Order{ID: id, Amount: 3}) }); err != nil {
			t.Fatal(err)
		}
		fresh := tableIn(t, &process{Client: s.Client()}, name, shard.Hash(2), -1)
		var o Order
		if err := again(func() (err error) {
			o, err = fresh.Get(ctx, "day", id, func(o *shard.Options) { o.ConsistentRead = true })
			return err
		}); err != nil || o.Amount != 3 {
			t.Errorf("Get after a's acknowledged Put of 3: %+v, %v", o, err)
		}
		if err := again(func() error { return a.Delete(ctx, "day", id) }); err != nil {
			t.Fatal(err)
		}
		o = Order{}
		if err := again(func() (err error) {
			o, err = fresh.Get(ctx, "day", id, func(o *shard.Options) { o.ConsistentRead = true })
			return err
		}); !errors.Is(err, shard.ErrNotFound) {
			t.Errorf("Get after a's acknowledged Delete: %+v, %v, want ErrNotFound", o, err)
		}
	})
}

// TestReaderLongerTTL (class 3): a reader whose own HistoryTTL is longer
// than the base's finds every item after another process reshards and
// rebalances.
func TestReaderLongerTTL(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		name := s.Table(t, "pk:S", "sk:S")
		w := tableIn(t, &process{Client: s.Client()}, name, shard.Hash(2), 100*time.Millisecond)
		reader := tableIn(t, &process{Client: s.Client()}, name, shard.Hash(2), time.Minute)
		const items = 40
		for i := range items {
			if err := again(func() error { return w.Put(ctx, "day", Order{ID: fmt.Sprint("o", i), Amount: i}) }); err != nil {
				t.Fatal(err)
			}
		}
		if err := again(func() error { _, err := reader.Get(ctx, "day", "o0"); return err }); err != nil { // caches [2]
			t.Fatal(err)
		}
		if _, err := w.Reshard(ctx, "day", 4); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Rebalance(ctx, "day"); err != nil {
			t.Fatal(err)
		}
		missing := 0
		for i := range items {
			if err := again(func() error { _, err := reader.Get(ctx, "day", fmt.Sprint("o", i)); return err }); errors.Is(err, shard.ErrNotFound) {
				missing++
			} else if err != nil {
				t.Fatal(err)
			}
		}
		if missing > 0 {
			t.Errorf("the reader with a minute's HistoryTTL missed %d of %d items", missing, items)
		}
	})
}

// TestCacheByDatabase (class 6): two clients that reach different
// databases (DynamoDB Local keeps one per access key), each with a table
// of the same name, do not share a history.
func TestCacheByDatabase(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		keyed := func(key string) *dynamodb.Client {
			return s.Client(func(o *dynamodb.Options) {
				o.Credentials = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
					return aws.Credentials{AccessKeyID: key, SecretAccessKey: "secret"}, nil
				})
			})
		}
		ca, cb := keyed("dbA"+strconv.Itoa(int(time.Now().UnixNano()%1e6))), keyed("dbB"+strconv.Itoa(int(time.Now().UnixNano()%1e6)))
		name := ddbtest.TableName()
		in, err := layoutOf(name, shard.Hash(16)).CreateTableInput()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []*dynamodb.Client{ca, cb} {
			if _, err := c.CreateTable(ctx, in); err != nil {
				t.Fatal(err)
			}
		}
		ta, err := shard.NewTable[Order](ca, layoutOf(name, shard.Hash(16)))
		if err != nil {
			t.Fatal(err)
		}
		tb, err := shard.NewTable[Order](cb, layoutOf(name, shard.Hash(16)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ta.Reshard(ctx, "day", 64); err != nil {
			t.Fatal(err)
		}
		if err := again(func() error { return tb.Put(ctx, "day", Order{ID: "x", Amount: 1}) }); err != nil {
			t.Fatal(err)
		}
		if h, err := tb.Shards(ctx, "day"); err != nil || !slices.Equal(h, []int{16}) {
			t.Errorf("B's history: %v, %v, want [16]", h, err)
		}
		out, err := cb.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(name), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: shard.Key("day", shard.Hash(16).Pick("x"))}, "sk": &types.AttributeValueMemberS{Value: "x"}}})
		if err != nil || out.Item == nil {
			t.Errorf("B's item at its key under 16: %v, %v", out, err)
		}
	})
}

// TestRevisionBound (class 7): a record whose revision is near its bound
// is never written past it.
func TestRevisionBound(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c := s.Client()
		name := s.Table(t, "pk:S", "sk:S")
		l := layoutOf(name, shard.Hash(2))
		tbl, err := shard.NewTable[Order](c, l)
		if err != nil {
			t.Fatal(err)
		}
		if err := again(func() error { return tbl.Put(ctx, "day", Order{ID: "x", Amount: 1}) }); err != nil {
			t.Fatal(err)
		}
		key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "day#dynashard"}, "sk": &types.AttributeValueMemberS{Value: "dynashard#layout"}}
		if _, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(name), Key: key,
			UpdateExpression:          aws.String("SET #r = :r"),
			ExpressionAttributeNames:  map[string]string{"#r": "dynashard:rev"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":r": &types.AttributeValueMemberN{Value: strconv.FormatInt(1<<53-2, 10)}},
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := tbl.Reshard(ctx, "day", 4); !errors.Is(err, shard.ErrMalformedRecord) {
			t.Errorf("Reshard at revision 2^53-2: %v, want ErrMalformedRecord", err)
		}
		l.HistoryTTL = -1
		if h, err := l.Shards(ctx, c, "day"); err != nil {
			t.Errorf("the record after: %v, %v; want it still well-formed", h, err)
		}
	})
}

// TestReshardLostRace (class 8): a Reshard whose count another process
// overtook says so instead of returning nil.
func TestReshardLostRace(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		name := s.Table(t, "pk:S", "sk:S")
		announced := make(chan struct{})
		pp := &process{Client: s.Client()}
		pp.beforeUpdate = func(k int) error {
			if k == 2 { // p's activation waits for q's announcement
				<-announced
			}
			return nil
		}
		p := tableIn(t, pp, name, shard.Hash(8), 50*time.Millisecond)
		q := tableIn(t, &process{Client: s.Client()}, name, shard.Hash(8), 50*time.Millisecond)
		if err := again(func() error { return p.Put(ctx, "day", Order{ID: "x", Amount: 1}) }); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		var h []int
		go func() {
			var err error
			h, err = p.Reshard(ctx, "day", 6)
			done <- err
		}()
		waitPending(t, s, name, "day")
		qctx, stop := context.WithCancel(ctx)
		go func() { _, _ = q.Reshard(qctx, "day", 3) }()
		for {
			got, err := tableIn(t, &process{Client: s.Client()}, name, shard.Hash(8), -1).Shards(ctx, "day")
			if err != nil {
				t.Fatal(err)
			}
			if slices.Equal(got, []int{8, 6, 3}) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		close(announced)
		err := <-done
		stop()
		if err == nil && h[len(h)-1] != 6 {
			t.Fatalf("Reshard(6) returned history %v and no error", h)
		}
		if err != nil && !errors.Is(err, shard.ErrConflict) {
			t.Fatalf("Reshard(6): %v, want ErrConflict", err)
		}
	})
}

// TestRecordUpdateInTransaction: an update of the record that DynamoDB
// refuses because a Rebalance's move holds the record in a transaction
// (TransactionConflictException, which the SDK does not retry) is tried
// again.
func TestRecordUpdateInTransaction(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		name := s.Table(t, "pk:S", "sk:S")
		p := &process{Client: s.Client()}
		p.beforeUpdate = func(k int) error {
			if k <= 3 {
				return &types.TransactionConflictException{Message: aws.String("injected")}
			}
			return nil
		}
		tbl := tableIn(t, p, name, shard.Hash(2), 50*time.Millisecond)
		if err := again(func() error { return tbl.Put(ctx, "day", Order{ID: "x", Amount: 1}) }); err != nil {
			t.Fatal(err)
		}
		if h, err := tbl.Reshard(ctx, "day", 4); err != nil || !slices.Equal(h, []int{2, 4}) {
			t.Fatalf("Reshard through 3 conflicts: %v, %v, want [2 4]", h, err)
		}
		if p.updates != 5 {
			t.Errorf("%d UpdateItems, want 5 (3 refused, the announcement, the activation)", p.updates)
		}
	})
}

// again calls f again while it fails with ErrTooLate (at most 20 times):
// a loaded machine can hold a request past a short fence, and a request
// abandoned so is safe to retry; these tests are about what a write
// that was acknowledged leaves, not about speed.
func again(f func() error) error {
	var err error
	for range 20 {
		if err = f(); !errors.Is(err, shard.ErrTooLate) {
			return err
		}
	}
	return err
}
