package shard_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynashard/dynashard/shard"
)

// The merge of the multi-process checker's histories (the children's, the
// relay's log of what the server answered) into one history per item,
// checked with lin_test.go's model (linOp.step, linearizable), and the
// final scan of the table.

// mprocLine is one line of a child's history file. T is "call" (before
// the call: Kind, Key, Arg, Expect, Once), "ret" (after it: Conflict, Unknown,
// Found, Got, Retried), "dup" (a scatter read returned Key twice) or
// "note". At is unix nanoseconds.
type mprocLine struct {
	T        string
	Op       string
	Key      string  `json:",omitempty"`
	Kind     linKind `json:",omitempty"`
	Arg      int     `json:",omitempty"`
	Expect   int     `json:",omitempty"`
	At       int64
	Conflict bool   `json:",omitempty"`
	Unknown  bool   `json:",omitempty"`
	Found    bool   `json:",omitempty"`
	Got      int    `json:",omitempty"`
	Retried  bool   `json:",omitempty"` // a write whose request was sent again after an attempt that may have applied
	Once     bool   `json:",omitempty"` // a call: ExactlyOnce, so never applied twice
	Note     string `json:",omitempty"`
}

// mprocHistory is the merged history of a run: per item, and what the
// scatter reads saw.
type mprocHistory struct {
	start int64
	ops   map[string][]linOp // by base/id
	dups  []string
	notes []string
	open  int // writes whose outcome was unknown (cut off, failed or killed)
	late  int // writes answered by the server after their call had returned
	// outside holds the items a write of which reached the server after
	// its deadline: the protocol assumes a request sent within its fence
	// is applied within it, so a copy such an item has at the end where
	// it should not is reported apart, as outside the guarantee; and so
	// is a violation whose shortest bad prefix holds such a write.
	outside map[string]bool
}

// add merges one child's history file. end is when the child ended (its
// exit, or its kill); a write still running then is an unknown outcome.
func (h *mprocHistory) add(path, child string, end int64, relay *mprocRelay) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	type key struct{ op, item string }
	calls, rets := map[key]mprocLine{}, map[key]mprocLine{}
	var order []key
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l mprocLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			continue // a line cut by a kill
		}
		k := key{l.Op, l.Key}
		switch l.T {
		case "call":
			calls[k] = l
			order = append(order, k)
		case "ret":
			rets[k] = l
		case "dup":
			h.dups = append(h.dups, fmt.Sprintf("%s by %s's %s at %v", l.Key, child, l.Note, time.Duration(l.At-h.start)))
		case "note":
			h.notes = append(h.notes, child+": "+l.Note)
		}
	}
	for _, k := range order {
		c := calls[k]
		op := linOp{kind: c.Kind, arg: c.Arg, expect: c.Expect, call: c.At - h.start, by: child}
		_, op.late = relay.reached(c.Op)
		r, done := rets[k]
		if c.Kind == linGet {
			if done {
				op.ret, op.found, op.got = r.At-h.start, r.Found, r.Got
				h.ops[c.Key] = append(h.ops[c.Key], op)
			}
			continue // a read that did not answer says nothing
		}
		last, lost := relay.answered(c.Op)
		reached, late := relay.reached(c.Op)
		if late {
			if h.outside == nil {
				h.outside = map[string]bool{}
			}
			h.outside[c.Key] = true
		}
		settle := func(t int64) int64 { // the latest its requests may apply
			if lost {
				return math.MaxInt64
			}
			return max(t, last) - h.start
		}
		twice := !c.Once // killed: its attempts so far are not known
		if !done {
			op.unknown, op.ret = true, settle(end)
			h.open++
		} else {
			op.ret, op.conflict, op.unknown = r.At-h.start, r.Conflict, r.Unknown
			if op.unknown {
				op.ret = settle(r.At)
				h.open++
			}
			if last > r.At {
				h.late++
			}
			twice = r.Retried || lost || last > r.At
		}
		h.ops[c.Key] = append(h.ops[c.Key], op)
		if twice {
			// At-least-once: an attempt sent again, or one the server
			// answered after the call returned, may apply once more,
			// until the server answered the last: once per request
			// beyond the first that reached the server (a Load's call
			// sends many; at most 3 more, to keep the check tractable).
			again := op
			again.unknown, again.conflict = true, false
			for range min(max(reached-1, 1), 3) {
				h.ops[c.Key] = append(h.ops[c.Key], again)
			}
		}
	}
	return sc.Err()
}

// mprocViolation is one item whose history no serial order explains.
type mprocViolation struct {
	key   string
	at    time.Duration // when it was broken at the latest: the last invocation of the shortest bad prefix (whose reads still running then are left out)
	final bool          // only the final reads break it: an acknowledged write no read finds
	late  bool          // the shortest bad prefix holds a write that reached the server after its deadline (outside the guarantee), anywhere in it
	tail  string
}

// check runs the linearizability check on every item, in parallel.
func (h *mprocHistory) check() (bad []mprocViolation, total int) {
	keys := make([]string, 0, len(h.ops))
	for k, ops := range h.ops {
		keys = append(keys, k)
		total += len(ops)
	}
	sort.Strings(keys)
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for _, k := range keys {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			ops := h.ops[k]
			if linearizable(ops) {
				return
			}
			v := mprocViolation{key: k}
			during := slices.DeleteFunc(slices.Clone(ops), func(op linOp) bool { return op.by == "final" })
			v.final = linearizable(during)
			// A write that reached the server late anywhere in the bad
			// prefix may have left a second copy that breaks the history
			// much later (a write meeting two copies conflicts), so the
			// whole prefix counts, not only its last operations.
			prefix := badPrefix(ops)
			v.late = slices.ContainsFunc(prefix, func(op linOp) bool { return op.late })
			tail := prefix[max(0, len(prefix)-16):]
			v.at = time.Duration(tail[len(tail)-1].call)
			v.tail = dumpOps(tail)
			mu.Lock()
			bad = append(bad, v)
			mu.Unlock()
		})
	}
	wg.Wait()
	sort.Slice(bad, func(i, j int) bool { return bad[i].at < bad[j].at })
	return bad, total
}

// mprocScan reads the whole table and reports every copy at a key that
// the base's history (hist) does not give the item's id (an orphan: no
// read looks there), and every id stored at two keys at once.
func mprocScan(ctx context.Context, c *dynamodb.Client, table string, hist map[string][]int) (orphans, doubles []string, err error) {
	copies := map[string][]string{}
	p := dynamodb.NewScanPaginator(c, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, nil, err
		}
		for _, item := range out.Items {
			if shard.IsRecord(item) {
				continue
			}
			var k struct {
				PK string `dynamodbav:"pk"`
				SK string `dynamodbav:"sk"`
			}
			if err := attributevalue.UnmarshalMap(item, &k); err != nil {
				return nil, nil, err
			}
			base, suffix, err := shard.Parse(k.PK)
			if err != nil {
				return nil, nil, err
			}
			id := base + "/" + k.SK
			copies[id] = append(copies[id], k.PK)
			if !slices.ContainsFunc(hist[base], func(n int) bool { return shard.Hash(n).Pick(k.SK) == suffix }) {
				orphans = append(orphans, fmt.Sprintf("%s at %s (history %v)", id, k.PK, hist[base]))
			}
		}
	}
	for id, keys := range copies {
		if len(keys) > 1 {
			doubles = append(doubles, fmt.Sprintf("%s at %v", id, keys))
		}
	}
	sort.Strings(orphans)
	sort.Strings(doubles)
	return orphans, doubles, nil
}

// split parts findings that begin with an item's key ("b1/i3 at …") into
// those of items inside the guarantee and those outside it.
func (h *mprocHistory) split(found []string) (inside, outside []string) {
	for _, f := range found {
		key, _, _ := strings.Cut(f, " ")
		if h.outside[key] {
			outside = append(outside, f)
		} else {
			inside = append(inside, f)
		}
	}
	return inside, outside
}
