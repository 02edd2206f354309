package timeseries_test

import (
	"fmt"
	"time"

	"github.com/dynashard/dynashard/timeseries"
)

func ExampleRouter() {
	r := timeseries.Router{Prefix: "events", Period: timeseries.Week}
	at := time.Date(2026, 11, 22, 15, 0, 0, 0, time.UTC)
	fmt.Println(r.Table(at))
	// A read of the last ten days spans two weekly tables.
	for name := range r.Tables(at.AddDate(0, 0, -10), at) {
		fmt.Println(name)
	}
	start, _ := r.Parse("events_2026-W47")
	fmt.Println(start.Format(time.DateOnly))
	// Output:
	// events_2026-W47
	// events_2026-W46
	// events_2026-W47
	// 2026-11-16
}
