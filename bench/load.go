package main

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"

	"github.com/dynashard/dynashard/internal/batch"
	"github.com/dynashard/dynashard/shard"
)

// loadResult is one run of scenario 5.
type loadResult struct {
	written     float64 // items the library reports applied
	elapsed     time.Duration
	stopped     bool // hit its time limit before the input was done
	requests    int
	unprocessed int
	throttled   int
	cpu         cpuUse
}

// load is scenario 5: the same input, sorted by partition key (what an
// export produces, the guide's "U1#1…U1#100, U2#1…"), written in input
// order by the batch engine, and written by shard.Table.Load, which
// interleaves keys so consecutive requests hit different partitions.
func (b *bencher) load(ctx context.Context) (*section, error) {
	c := b.cfg
	endpoint, _, table, drop, err := b.dayTable(ctx)
	if err != nil {
		return nil, err
	}
	defer drop()

	keys := c.loadKeys
	perKey := int(math.Ceil(c.wcu * c.loadSeconds))
	total := keys * perKey
	// The model's shortest load: every key written at its cap from the
	// start, less the burst credit each key starts with; limit is the rate
	// that takes.
	ideal := time.Duration((float64(perKey)/c.wcu - b.burst().Seconds()) * float64(time.Second))
	ideal = max(ideal, 100*time.Millisecond)
	limit := float64(total) / ideal.Seconds()
	sortedBox := ideal + max(2*time.Second, ideal/2)
	loaderBox := 4*ideal + 10*time.Second

	sec := &section{title: "Bulk load"}
	sec.intro = append(sec.intro, fmt.Sprintf(
		"%d partition keys × %d items (%d items of about 230 bytes, 1 WCU each), sorted by key. "+
			"*sorted*: the batch engine (internal/batch.WriteSeq) writes them in input order, so each 25-item request "+
			"and its neighbours hit one key. *interleaved*: shard.Table.Load reorders them round-robin over the keys "+
			"(its default buffer of 100,000 items holds the whole input, so every key is written from the start), and the "+
			"batch engine paces each key at the rate the proxy admits it. "+
			"Both send at most 8 requests at once. The model allows %s WCU/s per key, %s items/s in all; with each key's "+
			"initial burst credit the shortest possible load takes %s, a limit of %s items/s for this input. "+
			"The sorted run is stopped after %s (its rate is what it wrote by then).",
		keys, perKey, total, fig(c.wcu), fig(float64(keys)*c.wcu), ideal.Round(10*time.Millisecond), fig(limit),
		sortedBox.Round(100*time.Millisecond)))
	t := sec.table("input order", "items written", "time", "items/s", "limit", "ratio", "BatchWriteItem calls",
		"unprocessed entries", "unprocessed per item", "throttled calls", "client CPU", "server CPU", "machine CPU")

	input := func(prefix string) iter.Seq2[string, benchItem] {
		return func(yield func(string, benchItem) bool) {
			for k := range keys {
				for i := range perKey {
					if !yield(fmt.Sprintf("%sU%d", prefix, k+1), benchItem{SK: fmt.Sprintf("%06d", i), Payload: benchPayload}) {
						return
					}
				}
			}
		}
	}
	// One shard per base: the bases themselves are the partition keys, so
	// "sorted by base" is "sorted by partition key" and only the order differs.
	st := shard.Hash(1)

	runs := []struct {
		name string
		box  time.Duration
		run  func(ctx context.Context, cl shard.Client) (written int, err error)
	}{
		{"sorted", sortedBox, func(ctx context.Context, cl shard.Client) (int, error) {
			tbl, err := shard.NewTable[benchItem](cl, shard.Layout{Table: table, PartitionKey: "pk", SortKey: "sk", Strategy: st})
			if err != nil {
				return 0, err
			}
			writes := func(yield func(batch.Write) bool) {
				for base, it := range input("S") {
					pk, err := tbl.Key(base, it.SK)
					if err != nil {
						return
					}
					it.PK = pk
					av, err := attributevalue.MarshalMap(it)
					if err != nil {
						return
					}
					if !yield(batch.Write{Table: table, Put: av}) {
						return
					}
				}
			}
			bs, err := batch.WriteSeq(ctx, cl, writes, func(o *batch.Options) {
				o.KeyAttributes = map[string][]string{table: {"pk", "sk"}}
				o.StallTimeout = 24 * time.Hour // measure throughput, never give up
			})
			return bs.Done, err
		}},
		{"interleaved", loaderBox, func(ctx context.Context, cl shard.Client) (int, error) {
			tbl, err := shard.NewTable[benchItem](cl, shard.Layout{Table: table, PartitionKey: "pk", SortKey: "sk", Strategy: st})
			if err != nil {
				return 0, err
			}
			ls, err := tbl.Load(ctx, input("L"))
			return ls.Written, err
		}},
	}
	var res []loadResult
	for _, r := range runs {
		p, err := b.proxy(endpoint, 0)
		if err != nil {
			return sec, err
		}
		cl := b.client(p.URL(), 16)
		b.prog.statusLive(r.name, func() string {
			return fmt.Sprintf("%.0f of %d items admitted", p.Stats().Total.WCU, total)
		})
		rctx, cancel := context.WithTimeout(ctx, r.box)
		s0 := sampleCPU()
		written, err := r.run(rctx, cl)
		s1 := sampleCPU()
		cancel()
		st := p.Stats()
		p.Close()
		lr := loadResult{
			written: float64(written), elapsed: s1.at.Sub(s0.at),
			requests: st.Total.Requests, unprocessed: st.Total.Unprocessed, throttled: st.Total.Throttled,
			cpu: cpuBetween(s0, s1),
		}
		if err != nil {
			if ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
				return sec, fmt.Errorf("%s load: %w", r.name, err)
			}
			lr.stopped = true
		}
		res = append(res, lr)
		rate := lr.written / lr.elapsed.Seconds()
		when := lr.elapsed.Round(10 * time.Millisecond).String()
		if lr.stopped {
			when += " (stopped)"
		}
		t.row(append([]string{r.name, fig(lr.written), when, fig(rate), fig(limit), pct(rate / limit),
			fmt.Sprint(lr.requests), fmt.Sprint(lr.unprocessed), perItem(lr.unprocessed, lr.written), fmt.Sprint(lr.throttled)}, lr.cpu.cells()...)...)
	}
	if len(res) == 2 {
		sec.notes = append(sec.notes, fmt.Sprintf("The interleaved load had %s unprocessed entries per item written (ratio: %s of the limit).",
			perItem(res[1].unprocessed, res[1].written), pct(res[1].written/res[1].elapsed.Seconds()/limit)))
		rs, ri := res[0].written/res[0].elapsed.Seconds(), res[1].written/res[1].elapsed.Seconds()
		note := fmt.Sprintf("The interleaving loader wrote %.1f× as many items per second as the same "+
			"engine fed sorted input, and finished in %s against the model's shortest %s.",
			ri/rs, res[1].elapsed.Round(10*time.Millisecond), ideal.Round(10*time.Millisecond))
		if u := res[1].cpu; ri < 0.9*limit && u.saturated() {
			note += fmt.Sprintf(" It fell short of the limit with the machine's CPU saturated (%s busy; client %.2f cores",
				pct(u.machine), u.client)
			if u.serverKnown {
				note += fmt.Sprintf(", server %.2f cores", u.server)
			}
			note += "): the shortfall measures this machine, not the loader."
		}
		sec.notes = append(sec.notes, note)
	}
	return sec, nil
}

// perItem is unprocessed entries per item written, to two decimals.
func perItem(unprocessed int, written float64) string {
	if written == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", float64(unprocessed)/written)
}
