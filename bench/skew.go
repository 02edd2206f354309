package main

import (
	"context"
	"fmt"
	"iter"
	"math/rand/v2"
	"time"

	"github.com/dynashard/dynashard/internal/skew"
	"github.com/dynashard/dynashard/shard"
)

// idFamily generates n ids of one kind, the same ones on every run.
type idFamily struct {
	name string
	gen  func(r *rand.Rand, i int) string
}

var firstNames = []string{"ada", "alan", "barbara", "edsger", "grace", "john", "ken", "leslie", "margaret", "niklaus", "rob", "tony"}
var domains = []string{"example.com", "example.org", "mail.example.net", "corp.example"}

var idFamilies = []idFamily{
	{"ORD-00000001… sequential", func(_ *rand.Rand, i int) string { return fmt.Sprintf("ORD-%08d", i+1) }},
	{"random UUIDs", func(r *rand.Rand, _ int) string {
		a, b := r.Uint64(), r.Uint64()
		a = a&^0xf000 | 0x4000     // version 4
		b = b&^(0xc<<60) | 0x8<<60 // variant 10
		return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", a>>32, a>>16&0xffff, a&0xffff, b>>48, b&0xffffffffffff)
	}},
	{"user<random int>", func(r *rand.Rand, _ int) string { return fmt.Sprintf("user%d", r.IntN(1_000_000_000)) }},
	{"e-mail addresses", func(r *rand.Rand, _ int) string {
		return fmt.Sprintf("%s.%s%d@%s", firstNames[r.IntN(len(firstNames))], firstNames[r.IntN(len(firstNames))],
			r.IntN(10000), domains[r.IntN(len(domains))])
	}},
	{"RFC 3339 timestamps (ms)", func(r *rand.Rand, i int) string {
		// About 1,000 events a second, in order, as a hot day's writes arrive.
		t := time.Date(2014, 7, 9, 0, 0, 0, 0, time.UTC).Add(time.Duration(i)*time.Millisecond + time.Duration(r.IntN(1000))*time.Microsecond)
		return t.Format("2006-01-02T15:04:05.000Z07:00")
	}},
}

func (f idFamily) ids(n int) iter.Seq[string] {
	return func(yield func(string) bool) {
		r := rand.New(rand.NewPCG(1, 2))
		for i := range n {
			if !yield(f.gen(r, i)) {
				return
			}
		}
	}
}

// skew is scenario 4: how evenly Hash and the guide's CodePointProduct
// spread five families of ids, computed with the skew analysis of `dynashard analyze`. No server.
func (b *bencher) skew(ctx context.Context) (*section, error) {
	c := b.cfg
	sec := &section{title: "Calculated strategies"}
	sec.intro = append(sec.intro, fmt.Sprintf(
		"%d ids of each family mapped to N = %d suffixes by shard.Hash (the default) and shard.CodePointProduct "+
			"(the guide's formula: product of code points mod N, plus 1), measured with `dynashard analyze`'s analysis. "+
			"max/mean is the hottest suffix's load over the mean (1.0 is perfect, N means one suffix takes every write); "+
			"the hottest share is the fraction of all writes that suffix takes. A random assignment gives max/mean ≈ %s here.",
		c.ids, c.skewN, randomMaxMean(c.ids, c.skewN)))
	t := sec.table("ids", "strategy", "suffixes used", "max/mean", "hottest suffix", "hottest share", "verdict")
	for _, f := range idFamilies {
		if err := ctx.Err(); err != nil {
			return sec, err
		}
		b.prog.status(f.name)
		reps, err := skew.Analyze(f.ids(c.ids), shard.Hash(c.skewN), shard.CodePointProduct(c.skewN))
		if err != nil {
			return sec, err
		}
		for i, r := range reps {
			name := []string{"Hash", "CodePointProduct"}[i]
			t.row(f.name, name, fmt.Sprintf("%d of %d", r.N-r.Unused, r.N), fmt.Sprintf("%.2f", r.MaxMean),
				fmt.Sprint(r.Hottest), fmt.Sprintf("%.2f %%", 100*r.HotShare), string(r.Verdict))
		}
	}
	return sec, nil
}

// randomMaxMean is the max/mean of one uniformly random assignment of ids
// to n suffixes, the yardstick for "even".
func randomMaxMean(ids, n int) string {
	r := rand.New(rand.NewPCG(3, 4))
	counts := make([]int, n)
	for range ids {
		counts[r.IntN(n)]++
	}
	mx := 0
	for _, c := range counts {
		mx = max(mx, c)
	}
	return fmt.Sprintf("%.2f", float64(mx)/(float64(ids)/float64(n)))
}
