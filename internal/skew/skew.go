// Package skew measures how evenly a suffix strategy spreads a sample of
// ids: the counts per suffix, Pearson's chi-square against a uniform
// spread, and a plain-language verdict. It serves `dynashard analyze` and
// the bench; its Strategy is shard.Strategy's method set, so that the
// package needs nothing of shard. Its Check and Pick are also shard's
// checks of a strategy, one home for both.
package skew

import (
	"fmt"
	"iter"
	"math"

	"github.com/dynashard/dynashard/internal/errs"
)

// Strategy is shard.Strategy: N suffixes, and the suffix of an id.
type Strategy interface {
	N() int
	Pick(id string) int
}

// MaxN is shard.MaxN (shard declares it from this one), the largest shard
// count a strategy may report.
const MaxN = 10_000

// Check validates a Strategy's N: shard's check of every strategy at
// construction and Analyze's. A typed nil (a nil pointer, map, func… in
// the interface) is refused like nil, before any of its methods is
// called. It is generic so that shard's Strategy is checked without a
// conversion between interface types.
func Check[S Strategy](s S) error {
	if any(s) == nil {
		return fmt.Errorf("%w: nil strategy", errs.InvalidStrategy)
	}
	if errs.IsNil(s) {
		return fmt.Errorf("%w: nil strategy of type %T", errs.InvalidStrategy, s)
	}
	if n := s.N(); n < 1 || n > MaxN {
		return fmt.Errorf("%w: %v has N = %d, want 1..%d", errs.InvalidStrategy, s, n, MaxN)
	}
	return nil
}

// Pick calls s.Pick and validates its output, so that a faulty
// user-supplied Strategy yields an error naming the id instead of a
// wrong key. On shard's hot path (every key computed).
func Pick[S Strategy](s S, id string) (int, error) {
	suffix := s.Pick(id)
	if n := s.N(); suffix < 1 || suffix > n {
		return 0, fmt.Errorf("%w: %v picked suffix %d for id %q, want 1..%d", errs.InvalidStrategy, s, suffix, id, n)
	}
	return suffix, nil
}

// Verdict is the plain-language outcome of Analyze.
type Verdict string

const (
	// Even: the spread is consistent with a uniform random assignment, or
	// the hottest suffix carries at most 10 % more than its share.
	Even Verdict = "even"
	// Uneven: measurably non-uniform, but no suffix takes twice its share.
	Uneven Verdict = "uneven"
	// Skewed: some suffix takes at least twice its share, a hot key: the
	// strategy defeats the purpose of sharding for these ids.
	Skewed Verdict = "skewed"
	// TooFewIDs: fewer than 5 ids per suffix on average, too few to judge.
	TooFewIDs Verdict = "too few ids"
)

// Report is the spread of a sample of ids over one strategy's suffixes. The
// zero value is an empty report.
type Report struct {
	Strategy string // the strategy, as fmt's %v prints it
	N        int    // number of suffixes
	IDs      int    // number of ids analysed

	// Counts[i] is the number of ids on suffix i+1.
	Counts []int

	Mean       float64 // IDs / N
	Max        int     // ids on the hottest suffix
	Hottest    int     // the hottest suffix (the lowest, on a tie)
	MaxMean    float64 // Max / Mean; 1.0 is perfect, N means one suffix takes all
	HotShare   float64 // Max / IDs: the fraction of all writes on the hottest suffix
	Unused     int     // suffixes no id maps to
	ChiSquare  float64 // Pearson's statistic against a uniform spread, N-1 degrees of freedom
	PValue     float64 // probability of a statistic this large under a uniform spread
	Verdict    Verdict
	Conclusion string // one plain sentence explaining Verdict
}

// Analyze maps every id to a suffix with each strategy, in a single pass over
// ids, and returns one Report per strategy in the order given. It is how a
// user sees, before shipping, that shard.CodePointProduct sends most
// ORD-00000001-style ids to suffix 1 while shard.Hash spreads them.
//
// Memory is O(sum of N), independent of the number of ids. A nil ids is an
// error matching errs.Invalid. Analyze returns an error matching
// errs.InvalidStrategy (shard.ErrInvalidStrategy) if a strategy is nil,
// reports N outside 1..maxN, or picks a suffix outside 1..N.
func Analyze(ids iter.Seq[string], strategies ...Strategy) ([]Report, error) {
	if ids == nil {
		return nil, fmt.Errorf("%w: Analyze: the sequence of ids is nil", errs.Invalid)
	}
	counts := make([][]int, len(strategies))
	for i, s := range strategies {
		if err := Check(s); err != nil {
			return nil, err
		}
		counts[i] = make([]int, s.N())
	}
	total := 0
	for id := range ids {
		for i, s := range strategies {
			k, err := Pick(s, id)
			if err != nil {
				return nil, err
			}
			counts[i][k-1]++
		}
		total++
	}
	reports := make([]Report, len(strategies))
	for i, s := range strategies {
		reports[i] = NewReport(strategyName(s), total, counts[i])
	}
	return reports, nil
}

func strategyName(s Strategy) string {
	if st, ok := s.(fmt.Stringer); ok {
		return st.String()
	}
	return fmt.Sprintf("%T(%d)", s, s.N())
}

// NewReport is the Report of counts, the ids of a sample per suffix (index
// i for suffix i+1), ids in all, under the strategy name.
func NewReport(name string, ids int, counts []int) Report {
	n := len(counts)
	r := Report{Strategy: name, N: n, IDs: ids, Counts: counts, Hottest: 1, PValue: 1}
	r.Mean = float64(ids) / float64(n)
	for i, c := range counts {
		if c > r.Max {
			r.Max, r.Hottest = c, i+1
		}
		if c == 0 {
			r.Unused++
		}
		if r.Mean > 0 {
			d := float64(c) - r.Mean
			r.ChiSquare += d * d / r.Mean
		}
	}
	if ids > 0 {
		r.MaxMean = float64(r.Max) / r.Mean
		r.HotShare = float64(r.Max) / float64(ids)
	}
	if n > 1 && ids > 0 {
		r.PValue = chiSquareSurvival(r.ChiSquare, float64(n-1))
	}
	r.Verdict, r.Conclusion = verdict(r)
	return r
}

// Significance level below which a spread is called non-uniform. Small,
// because users run this on large samples and a false alarm costs trust.
const alpha = 0.001

func verdict(r Report) (Verdict, string) {
	switch {
	case r.N == 1:
		return Even, "one suffix: no sharding, every id on suffix 1"
	case r.IDs == 0 || r.Mean < 5:
		return TooFewIDs, fmt.Sprintf("%d ids over %d suffixes is fewer than 5 per suffix; analyse at least %d ids", r.IDs, r.N, 5*r.N)
	case r.PValue >= alpha:
		return Even, fmt.Sprintf("consistent with a uniform spread: hottest suffix %d has %.2f× the mean", r.Hottest, r.MaxMean)
	case r.MaxMean <= 1.10:
		return Even, fmt.Sprintf("statistically non-uniform but within 10%%: hottest suffix %d has %.2f× the mean", r.Hottest, r.MaxMean)
	case r.MaxMean >= 2:
		return Skewed, fmt.Sprintf("hot key: suffix %d takes %.1f%% of ids (%.1f× the mean), %d of %d suffixes unused", r.Hottest, 100*r.HotShare, r.MaxMean, r.Unused, r.N)
	default:
		return Uneven, fmt.Sprintf("non-uniform: hottest suffix %d has %.2f× the mean, %d of %d suffixes unused", r.Hottest, r.MaxMean, r.Unused, r.N)
	}
}

// chiSquareSurvival returns P(X ≥ x) for X chi-square distributed with k
// degrees of freedom: the regularised upper incomplete gamma Q(k/2, x/2).
func chiSquareSurvival(x, k float64) float64 {
	if x <= 0 {
		return 1
	}
	return gammaQ(k/2, x/2)
}

// gammaQ is the regularised upper incomplete gamma function Q(a, x), by the
// series for x < a+1 and Lentz's continued fraction otherwise (Numerical
// Recipes §6.2). Accurate to ~1e-12, far beyond what a verdict needs.
func gammaQ(a, x float64) float64 {
	lg, _ := math.Lgamma(a)
	front := math.Exp(-x + a*math.Log(x) - lg)
	if x < a+1 {
		sum, term := 1/a, 1/a
		for n := 1.0; n < 10000; n++ {
			term *= x / (a + n)
			sum += term
			if math.Abs(term) < math.Abs(sum)*1e-15 {
				break
			}
		}
		return math.Max(0, 1-sum*front)
	}
	const tiny = 1e-300
	b := x + 1 - a
	c := 1 / tiny
	d := 1 / b
	h := d
	for i := 1.0; i < 10000; i++ {
		an := -i * (i - a)
		b += 2
		d = an*d + b
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = b + an/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		del := d * c
		h *= del
		if math.Abs(del-1) < 1e-15 {
			break
		}
	}
	return math.Min(1, h*front)
}
