package skew

import (
	"math"
	"testing"
)

// The chi-square survival function against closed forms: for 1 degree of
// freedom P = erfc(sqrt(x/2)), for 2 it is exp(-x/2), for 4 exp(-x/2)(1+x/2).
func TestChiSquareSurvival(t *testing.T) {
	for _, x := range []float64{0.001, 0.1, 0.5, 1, 2, 3.841, 6.635, 10, 30, 100} {
		refs := map[float64]float64{
			1: math.Erfc(math.Sqrt(x / 2)),
			2: math.Exp(-x / 2),
			4: math.Exp(-x/2) * (1 + x/2),
		}
		for k, want := range refs {
			got := chiSquareSurvival(x, k)
			if math.Abs(got-want) > 1e-10 {
				t.Errorf("chiSquareSurvival(%v, %v) = %v, want %v", x, k, got, want)
			}
		}
	}
	// Large k: the Wilson–Hilferty approximation is good to ~1e-3.
	for _, k := range []float64{199, 999, 9999} {
		for _, z := range []float64{-2, 0, 1, 3} {
			h := 2 / (9 * k)
			x := k * math.Pow(1-h+z*math.Sqrt(h), 3)
			want := 0.5 * math.Erfc(z/math.Sqrt2)
			if got := chiSquareSurvival(x, k); math.Abs(got-want) > 2e-3 {
				t.Errorf("chiSquareSurvival(%v, %v) = %v, want ≈ %v", x, k, got, want)
			}
		}
	}
}
