package sortid

import (
	"errors"
	"sort"
	"testing"
	"time"
)

func TestNewDay(t *testing.T) {
	for _, ts := range []time.Time{
		time.Date(2026, 11, 22, 15, 30, 12, 482917123, time.UTC),
		time.Date(2024, 2, 29, 23, 59, 59, 999999999, time.UTC),
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("east", 5*3600)), // still 2025 in UTC
	} {
		id := New(ts)
		got, err := Day(id)
		if want := ts.UTC().Format(DayLayout); got != want || err != nil {
			t.Errorf("Day(New(%v)) = %q, %v; want %q, nil (id %q)", ts, got, err, want, id)
		}
	}
}

func TestOrder(t *testing.T) {
	base := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	var ids []string
	var want []time.Time
	for i := range 200 {
		ts := base.Add(time.Duration(i*i*7919) * time.Millisecond)
		want = append(want, ts)
		ids = append(ids, New(ts))
	}
	sorted := append([]string(nil), ids...)
	sort.Strings(sorted)
	for i := range ids {
		if sorted[i] != ids[i] {
			t.Fatalf("ids do not sort by time: position %d got %q, want %q (%v)", i, sorted[i], ids[i], want[i])
		}
	}
}

func TestDayRejects(t *testing.T) {
	for _, id := range []string{
		"",
		"20261122-153012482917-9f3ac2e",   // short
		"20261122-153012482917-9f3ac2e1x", // long
		"20261122_153012482917-9f3ac2e1",
		"20261122-153012482917-9F3AC2E1", // upper-case hex
		"2026112a-153012482917-9f3ac2e1",
		"20261322-153012482917-9f3ac2e1", // month 13
		"20261122-253012482917-9f3ac2e1", // hour 25
		"20261122-15301248291x-9f3ac2e1",
	} {
		if _, err := Day(id); !errors.Is(err, ErrInvalidID) {
			t.Errorf("Day(%q) error = %v, want ErrInvalidID", id, err)
		}
	}
}

func FuzzDay(f *testing.F) {
	f.Add("20261122-153012482917-9f3ac2e1")
	f.Add("20240229-000000000000-00000000")
	f.Add("20230229-000000000000-00000000")
	f.Add("")
	f.Fuzz(func(t *testing.T, id string) {
		day, err := Day(id)
		if err != nil {
			if !errors.Is(err, ErrInvalidID) {
				t.Fatalf("Day(%q) error %v does not match ErrInvalidID", id, err)
			}
			return
		}
		// An accepted id names a real day, and is one New could make.
		d, perr := time.Parse(DayLayout, day)
		if perr != nil || d.Format("20060102") != id[:8] {
			t.Fatalf("Day(%q) = %q, which is not the id's day", id, day)
		}
		if len(id) != Len {
			t.Fatalf("Day accepted %q of length %d", id, len(id))
		}
	})
}
