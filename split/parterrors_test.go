package split_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/split"
)

// TestPartErrors: a transaction refused on several parts fails with one
// *PartError per part; errors.As finds the first, PartErrors every one.
func TestPartErrors(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		l := guideLayout()
		createTables(t, s, l)
		st := newStore[Product](t, s.Client(), l)
		p := Product{Id: 5, Title: "t", Price: "1", AverageCustomerRating: "4"}
		if _, err := st.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		_, err := st.Create(ctx, p)
		var first *split.PartError
		if !errors.Is(err, split.ErrConflict) || !errors.As(err, &first) {
			t.Fatalf("second Create: got %v, want ErrConflict with *PartErrors", err)
		}
		var got []string
		for _, pe := range split.PartErrors(err) {
			if !errors.Is(pe, split.ErrConflict) || pe.Key != (split.Key{PK: "5"}) {
				t.Errorf("%v: want ErrConflict on key 5", pe)
			}
			got = append(got, pe.Part)
		}
		if diff := cmp.Diff([]string{"catalog", "availability", "extended"}, got); diff != "" {
			t.Errorf("PartErrors named (-want +got):\n%s", diff)
		}
		if got[0] != first.Part {
			t.Errorf("PartErrors starts at %q, errors.As finds %q: want the same first", got[0], first.Part)
		}
		if pes := split.PartErrors(nil); pes != nil {
			t.Errorf("PartErrors(nil) = %v, want nil", pes)
		}
		if pes := split.PartErrors(errors.New("x")); pes != nil {
			t.Errorf("PartErrors of another error = %v, want nil", pes)
		}
	})
}
