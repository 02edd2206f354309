package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/dynashard/dynashard/dynashardtest"
	"github.com/dynashard/dynashard/examples/internal/svctest"
)

func TestMain(m *testing.M) { svctest.Main(m) }

// TestStreams: through a live Reshard and Rebalance, the dynashard
// consumer's per-day counts equal the table's; the naive consumer's do
// not (it reads each move as a delete).
func TestStreams(t *testing.T) {
	svctest.Each(t, func(t *testing.T, srv *dynashardtest.Server) {
		if srv.Kind() == dynashardtest.Dynalite {
			t.Skip("dynalite has no streams; the example says so with stream.ErrNoStreams")
		}
		var out bytes.Buffer
		s, err := run(context.Background(), []string{"-endpoint", srv.Endpoint(), "-orders", "60"}, &out)
		if err != nil {
			t.Fatalf("streams: %v\noutput:\n%s", err, out.String())
		}
		if s.Moved == 0 {
			t.Fatalf("no order moved: the example shows nothing\n%s", out.String())
		}
		naiveWrong := false
		for _, day := range s.Days {
			if s.Decoded[day] != s.Table[day] {
				t.Errorf("%s: the dynashard consumer counts %d, the table holds %d", day, s.Decoded[day], s.Table[day])
			}
			naiveWrong = naiveWrong || s.Raw[day] != s.Table[day]
		}
		if !naiveWrong {
			t.Errorf("the naive consumer's counts equal the table's though %d orders moved:\n%s", s.Moved, out.String())
		}
	})
}
