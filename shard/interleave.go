package shard

import "iter"

// interleave reorders in so that consecutive elements come from different
// keys, round-robin over the keys currently buffered, in first-seen order.
// It buffers at most maxItems elements or maxBytes bytes (whichever comes
// first, and always at least one element) and starts emitting once the
// buffer is full or the input ends, so sorted input (all of U1, then all of
// U2, …) comes out as U1, U2, …, Uk, U1, U2, … where k is the number of
// keys that fit in the buffer. Within a key, order is preserved. If the
// consumer stops early, drop (if not nil) receives every element read from
// in but not yielded, so a caller can account for each one.
func interleave[E any](in iter.Seq[E], key func(E) string, size func(E) int, maxItems, maxBytes int, drop func(E)) iter.Seq[E] {
	return func(yield func(E) bool) {
		var (
			queues = map[string]*fifo[E]{}
			ring   fifo[string] // keys with buffered elements, in turn order
			items  int
			bytes  int
		)
		next := func() E {
			k := ring.pop()
			q := queues[k]
			e := q.pop()
			if q.len() == 0 {
				delete(queues, k)
			} else {
				ring.push(k)
			}
			items--
			bytes -= size(e)
			return e
		}
		stopped := false
		defer func() {
			if stopped && drop != nil {
				for items > 0 {
					drop(next())
				}
			}
		}()
		for e := range in {
			k := key(e)
			q := queues[k]
			if q == nil {
				q = &fifo[E]{}
				queues[k] = q
				ring.push(k)
			}
			q.push(e)
			items++
			bytes += size(e)
			for items > 0 && (items >= maxItems || bytes >= maxBytes) {
				if !yield(next()) {
					stopped = true
					return
				}
			}
		}
		for items > 0 {
			if !yield(next()) {
				stopped = true
				return
			}
		}
	}
}

// fifo is a slice-backed queue that releases references as it pops and
// reuses its backing array once drained.
type fifo[E any] struct {
	buf  []E
	head int
}

func (q *fifo[E]) len() int { return len(q.buf) - q.head }

func (q *fifo[E]) push(e E) {
	if q.head > 0 && q.head == len(q.buf) {
		q.buf, q.head = q.buf[:0], 0
	} else if q.head > 64 && q.head*2 > len(q.buf) {
		// Compact so a long-lived queue does not grow without bound.
		n := copy(q.buf, q.buf[q.head:])
		clear(q.buf[n:])
		q.buf, q.head = q.buf[:n], 0
	}
	q.buf = append(q.buf, e)
}

func (q *fifo[E]) pop() E {
	var zero E
	e := q.buf[q.head]
	q.buf[q.head] = zero
	q.head++
	return e
}
