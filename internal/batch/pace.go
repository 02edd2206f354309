package batch

import (
	"math"
	"slices"
	"time"
)

// Pacing constants; the package doc explains the estimate they shape.
const (
	// paceInterval is how long a key's sends are counted before its rate
	// is estimated again: long enough to hold several of its responses,
	// short enough to follow a key whose capacity changes.
	paceInterval = 200 * time.Millisecond
	// paceHeadroom is how far above the admitted rate a throttled key is
	// paced. Above the key's capacity its partition is always busy (the
	// load runs at the limit); the price is about this share of entries
	// returned unprocessed.
	paceHeadroom = 0.25
	// paceDecrease is the most one interval can lower a key's rate by: a
	// key sent less than its capacity for a while (the client was slow, or
	// its entries ran short) is admitted less than its capacity, and a
	// few such intervals must not stop it.
	paceDecrease = 0.8
	// paceGrowth multiplies the rate of a key that waited for its pace and
	// had nothing returned during an interval: capacity may have grown.
	paceGrowth = 1.25
	// paceBurst bounds the allowance a key saves while it has nothing to
	// send, as a duration of its rate, so that an idle key does not burst.
	paceBurst = 50 * time.Millisecond
	// paceLinger is the longest a request made only of paced entries waits
	// to be filled while other requests are in flight: under pacing the
	// entries a request can carry accrue over time, and sending each as
	// soon as it may go would multiply the requests (and the client's and
	// the server's work) without writing more.
	paceLinger = 10 * time.Millisecond
	// minPaceKeys is the number of keys' states kept before idle ones are
	// dropped.
	minPaceKeys = 1 << 12
)

// keyPace is what the engine knows of one partition-key value's capacity
// during one call.
type keyPace struct {
	pk        string
	rate      float64   // units per second it is paced at; 0: not paced yet
	balance   float64   // allowance in units; an entry may go while it is positive
	at        time.Time // when balance was last brought up to date
	inflight  int       // entries charged to it in requests not yet answered
	park      []*job    // entries waiting for its allowance, oldest first
	slot      int       // index in pacer.waiting, -1 if park is empty
	notBefore time.Time // its leftovers' backoff: nothing of it goes before

	// The current interval: since start, units sent and returned
	// unprocessed in answered requests, and whether an entry had to wait.
	start, last time.Time // last: when the latest request counted was sent
	sent, left  float64
	limited     bool
}

// pacer holds the per-key state of one call. The engine's mutex guards it.
type pacer struct {
	keys        map[string]*keyPace
	waiting     []*keyPace // keys with parked entries
	parked      int        // entries parked, over all keys
	parkedBytes int64      // and their wire bytes
	sweepAt     int        // len(keys) that triggers dropping idle keys
	minRate     float64
	dues        []time.Time // scratch for ready
}

func newPacer(opts Options) *pacer {
	// No key is paced so slowly that one unit waits longer than the
	// engine's longest backoff, or long enough to come near the stall
	// timeout.
	longest := min(opts.MaxDelay, opts.StallTimeout/4)
	return &pacer{keys: map[string]*keyPace{}, sweepAt: minPaceKeys, minRate: 1 / max(longest.Seconds(), 1e-3)}
}

// of returns the pacing state of j's key, nil when the key is not paced.
func (p *pacer) of(j *job) *keyPace {
	if len(p.keys) == 0 {
		return nil
	}
	k := p.keys[j.partKey()]
	if k == nil || k.rate == 0 {
		return nil
	}
	return k
}

// refill brings k's allowance up to now.
func (k *keyPace) refill(now time.Time) {
	if dt := now.Sub(k.at).Seconds(); dt > 0 {
		k.balance = min(k.balance+dt*k.rate, k.depth())
	}
	k.at = now
}

func (k *keyPace) depth() float64 { return max(1, k.rate*paceBurst.Seconds()) }

// may reports whether an entry of k can go now: its allowance is positive,
// or nothing of it is in flight. The latter keeps every key moving at one
// request at a time at least, whatever its estimate: a key whose entries
// are returned unprocessed at random (not for capacity) is then never
// slower than the engine's own backoff makes it.
func (k *keyPace) may(now time.Time) bool {
	k.refill(now)
	return (k.balance > 0 || k.inflight == 0) && !now.Before(k.notBefore)
}

// hold keeps k's entries back until t at least.
func (k *keyPace) hold(t time.Time) {
	if t.After(k.notBefore) {
		k.notBefore = t
	}
}

// due is when k's allowance turns positive.
func (k *keyPace) due(now time.Time) time.Time {
	k.refill(now)
	t := now
	if k.balance <= 0 && k.inflight > 0 {
		t = now.Add(time.Duration((-k.balance + 1e-9) / k.rate * float64(time.Second)))
	}
	if t.Before(k.notBefore) {
		t = k.notBefore
	}
	return t
}

// charge counts j against its key's allowance as it goes into a request.
func (p *pacer) charge(j *job, now time.Time) {
	if len(p.keys) == 0 {
		return
	}
	k := p.keys[j.partKey()]
	if k == nil {
		return
	}
	if k.rate > 0 {
		k.refill(now)
		k.balance = max(k.balance-j.units, -k.depth())
	}
	k.inflight++
	j.pace = k
}

// uncharge undoes charge for an entry taken into a request that was not
// sent.
func (p *pacer) uncharge(j *job) {
	k := j.pace
	if k == nil {
		return
	}
	j.pace = nil
	k.inflight--
	if k.rate > 0 {
		k.balance = min(k.balance+j.units, k.depth())
	}
}

// park puts j at the back of its key's queue (front when it was sent
// before, to keep a key's entries roughly in order).
func (p *pacer) park(k *keyPace, j *job, front bool) {
	if front {
		k.park = slices.Insert(k.park, 0, j)
	} else {
		k.park = append(k.park, j)
	}
	if k.slot < 0 {
		k.slot = len(p.waiting)
		p.waiting = append(p.waiting, k)
	}
	p.parked++
	p.parkedBytes += j.wire
	k.limited = true
}

// unpark takes the oldest parked entry of k.
func (p *pacer) unpark(k *keyPace) *job {
	j := k.park[0]
	k.park[0] = nil
	k.park = k.park[1:]
	p.parked--
	p.parkedBytes -= j.wire
	if len(k.park) == 0 {
		k.park = nil
		last := p.waiting[len(p.waiting)-1]
		p.waiting[k.slot] = last
		last.slot = k.slot
		p.waiting = p.waiting[:len(p.waiting)-1]
		k.slot = -1
	}
	return j
}

// ready counts the parked entries that may go now (one per key at least,
// as many as its allowance covers) and how long the oldest of them has been
// able to, and returns when a request of room entries could be full: the
// time by which enough of the keys that may not go yet will.
func (p *pacer) ready(now time.Time, room int) (n int, oldest time.Duration, full time.Time) {
	p.dues = p.dues[:0]
	for _, k := range p.waiting {
		if !k.may(now) {
			p.dues = append(p.dues, k.due(now))
			continue
		}
		n += min(len(k.park), max(1, int(math.Ceil(k.balance))))
		if k.balance > 0 {
			oldest = max(oldest, time.Duration(min(k.balance, k.depth())/k.rate*float64(time.Second)))
		} else {
			oldest = paceLinger // it may go because nothing of it is in flight: no reason to wait
		}
	}
	if n >= room {
		return n, oldest, now
	}
	if need := room - n; need <= len(p.dues) {
		slices.SortFunc(p.dues, func(a, b time.Time) int { return a.Compare(b) })
		full = p.dues[need-1]
	} else if len(p.dues) > 0 {
		full = slices.MaxFunc(p.dues, func(a, b time.Time) int { return a.Compare(b) })
	}
	return n, oldest, full
}

// take moves parked entries whose keys may go into a request, one key
// after another, as long as accept (which adds an entry to the request if
// it has room for it) takes them, and charges them.
func (p *pacer) take(now time.Time, accept func(*job) bool) {
	for progress := true; progress; {
		progress = false
		for i := 0; i < len(p.waiting); i++ {
			k := p.waiting[i]
			if !k.may(now) || !accept(k.park[0]) {
				continue
			}
			j := p.unpark(k)
			p.charge(j, now)
			progress = true
			if k.slot != i {
				i-- // unpark moved another key into slot i
			}
		}
	}
}

// observe learns from a request sent at sentAt and answered now: batch is
// what it sent, left its entries returned unprocessed. learn is false for a
// response of a round in which the whole engine stalled: that says nothing
// of one key (the engine-wide backoff answers it).
func (p *pacer) observe(batch []*job, left map[*job]bool, learn bool, sentAt, now time.Time) {
	var touched []*keyPace
	for _, j := range batch {
		k := j.pace
		if k != nil {
			j.pace = nil
			k.inflight--
		}
		if !learn || k == nil && len(p.keys) == 0 && !left[j] {
			continue
		}
		pk := j.partKey()
		if pk == "" {
			continue
		}
		if k == nil {
			k = p.keys[pk]
		}
		if k == nil {
			if !left[j] {
				continue
			}
			k = &keyPace{pk: pk, slot: -1, start: now, last: now, at: now}
			p.keys[pk] = k
			p.sweep()
			continue // its interval starts now
		}
		if sentAt.Before(k.start) {
			continue // sent before the interval: its answer says what an older pace did
		}
		k.sent += j.units
		if left[j] {
			k.left += j.units
		}
		if sentAt.After(k.last) {
			k.last = sentAt
		}
		touched = append(touched, k)
	}
	for _, k := range touched {
		k.estimate(now, p.minRate)
	}
}

// estimate ends k's interval once the requests it counts were sent over
// long enough: a key that had entries returned is paced a little above the
// rate it was admitted at (its capacity, since it was sent more than
// that); one that waited for its pace and had nothing returned is allowed
// more. Only requests sent during the interval count, and over the time
// they were sent in, so that neither the answers to an older pace nor the
// requests still in flight skew the estimate.
func (k *keyPace) estimate(now time.Time, minRate float64) {
	d := k.last.Sub(k.start)
	if d < paceInterval {
		return
	}
	switch {
	case k.left > 0:
		admitted := (k.sent - k.left) / d.Seconds()
		if k.rate == 0 {
			k.balance, k.at = 0, now
		}
		k.refill(now)
		k.rate = max(minRate, admitted*(1+paceHeadroom), k.rate*paceDecrease)
	case k.limited && k.rate > 0:
		k.refill(now)
		k.rate *= paceGrowth
	}
	k.start, k.last, k.sent, k.left, k.limited = now, now, 0, 0, false
}

// sweep drops the state of keys with nothing parked or in flight once
// there are many, so that a call over many keys keeps bounded state.
func (p *pacer) sweep() {
	if len(p.keys) < p.sweepAt {
		return
	}
	for pk, k := range p.keys {
		if k.inflight == 0 && len(k.park) == 0 {
			delete(p.keys, pk)
		}
	}
	p.sweepAt = max(minPaceKeys, 2*len(p.keys))
}

// rates returns the rate of every key paced, nil if none is.
func (p *pacer) rates() []float64 {
	var out []float64
	for _, k := range p.keys {
		if k.rate > 0 {
			out = append(out, k.rate)
		}
	}
	return out
}

// all returns every parked entry, for the report of a call that stops.
func (p *pacer) all() []*job {
	var out []*job
	for _, k := range p.waiting {
		out = append(out, k.park...)
	}
	return out
}
