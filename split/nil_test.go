package split_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard/split"
)

// TestNilStoreLayout: the Layout of a nil or zero Store is the zero
// Layout, not a panic.
func TestNilStoreLayout(t *testing.T) {
	for name, st := range map[string]*split.Store[Product]{"nil": nil, "zero": {}} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if v := recover(); v != nil {
					t.Fatalf("Layout panicked: %v", v)
				}
			}()
			if diff := cmp.Diff(split.Layout{}, st.Layout()); diff != "" {
				t.Errorf("Layout (-want +got):\n%s", diff)
			}
		})
	}
}
