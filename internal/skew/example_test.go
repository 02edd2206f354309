package skew_test

import (
	"fmt"
	"iter"

	"github.com/dynashard/dynashard/internal/skew"
	"github.com/dynashard/dynashard/shard"
)

// The guide's calculated suffix against a hash, on sequential order numbers.
func ExampleAnalyze() {
	// 200,000 sequential order numbers, as many systems issue them.
	ids := func(yield func(string) bool) {
		for i := 1; i <= 200_000; i++ {
			if !yield(fmt.Sprintf("ORD-%08d", i)) {
				return
			}
		}
	}
	reports, err := skew.Analyze(iter.Seq[string](ids), shard.CodePointProduct(200), shard.Hash(200))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range reports {
		fmt.Printf("%s: %d of %d suffixes used, max/mean %.2f, %s\n", r.Strategy, r.N-r.Unused, r.N, r.MaxMean, r.Verdict)
	}
	// Output:
	// codepoint(200): 5 of 200 suffixes used, max/mean 134.47, skewed
	// hash(200): 200 of 200 suffixes used, max/mean 1.09, even
}
