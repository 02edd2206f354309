package record

import "time"

// View is what this process knows of a base's record: the shard-count
// history and whether its last count is still pending (see "Resharding"
// in shard's package doc), read at a known time. A view is used for at
// most the layout's HistoryTTL after it was read, and every request made
// under it must be done by its deadline.
type View struct {
	Shards  []int // oldest first; the last is pending if Pending is set
	Pending bool
	Rev     int
	// TTL and Wait are what the record asks of every process (see
	// "Across processes" in shard's package doc), if Recorded is set:
	// the base's HistoryTTL, and the fence its last change asks waiters
	// to wait before acting on it.
	TTL, Wait time.Duration
	Recorded  bool
	// At is when the read of the record was sent (or the write of it, for
	// the writer's own view): deadlines count from it, the earliest the
	// record can have been as seen. Got is when the answer came (zero if
	// unknown): a change the view shows had happened by then, so the fence
	// of a pending count counts from it (see Layout.Seen).
	At, Got time.Time
}

// Since is the earliest time v's record is known to have held v's
// content: Got, or At when Got is unknown.
func (v View) Since() time.Time {
	if v.Got.IsZero() {
		return v.At
	}
	return v.Got
}

// WriteN is the count writers use: the newest one that is not pending.
func (v View) WriteN() int {
	if v.Pending {
		return v.Shards[len(v.Shards)-2]
	}
	return v.Shards[len(v.Shards)-1]
}

// Trust is how long v may be used after it was read: the stricter of
// ttl (the layout's HistoryTTL, Layout.TTL) and the record's.
func (v View) Trust(ttl time.Duration) time.Duration {
	if v.Recorded {
		return min(ttl, v.TTL)
	}
	return ttl
}

// Deadline is when every request made under v must be done, for a
// layout of HistoryTTL ttl: a Reshard waits at least this long after the
// record changes before anyone writes under the next count, so no
// request of a process that did not see the change can land after that.
func (v View) Deadline(ttl time.Duration) time.Time { return v.At.Add(Fence(v.Trust(ttl))) }

// WaitFor is how long a process of HistoryTTL ttl waits after a change
// of the record before acting on it (activating a pending count,
// sweeping): the longer of its own fence and the one the record asks
// for, so that a process with a shorter HistoryTTL than another's still
// waits for the other's requests.
func (v View) WaitFor(ttl time.Duration) time.Duration {
	if v.Recorded {
		return max(Fence(ttl), v.Wait)
	}
	return Fence(ttl)
}

// Fence is the fence of a HistoryTTL: how long a change of the record
// takes to reach every request in flight of a process with that
// HistoryTTL. A view is trusted for ttl, and a request made under it may
// take as long again (at least maxFlightFloor) before it is abandoned.
func Fence(ttl time.Duration) time.Duration { return ttl + max(ttl, maxFlightFloor) }

// maxFlightFloor is the least time a request is given to complete, so
// that a Layout that caches nothing (HistoryTTL < 0) still lets requests
// run.
const maxFlightFloor = time.Second
