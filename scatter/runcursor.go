package scatter

import "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

// finished reports whether every shard was read to its end.
func (r *run) finished() bool {
	for i := range r.shards {
		if !r.shards[i].done {
			return false
		}
	}
	return true
}

// cursor returns where the next Page resumes, or "" when every shard was
// read to its end. An ordered run moves the default position to the last
// item returned; shards that stand elsewhere are listed on their own.
func (r *run) cursor() (Cursor, error) {
	if r.finished() {
		return "", nil
	}
	var last *position
	if r.last != nil {
		var err error
		if last, err = r.p.positionOf(r.last.ord, r.lastItem); err != nil {
			return "", err
		}
	}
	res := resume{def: r.from, starts: make([]*position, len(r.shards))}
	res.digest, res.hasDigest, res.byKey = r.fromID.digest, r.fromID.ok, r.fromID.byKey
	moved := false
	if r.p.ordered {
		res.def = r.p.later(res.def, last)
		moved = res.def == last && last != nil
	}
	switch {
	case res.def != nil && r.namedByKey():
		// The item's sort key names it (see resumedItem).
		res.byKey, res.digest, res.hasDigest = true, 0, false
	case moved:
		res.byKey, res.digest, res.hasDigest = false, r.p.itemDigest(r.lastItem), true
	}
	for i := range r.shards {
		pos, err := r.reached(&r.shards[i], last)
		if err != nil {
			return "", err
		}
		res.starts[i] = pos
	}
	return encodeCursor(r.p, res, r.p.o.CursorKey)
}

// reached returns the position up to which the shard's items have been
// returned: its start, then the last item it returned in this run, and,
// in an ordered run, everything up to the last item returned, since the
// merge returns no item before every shard that is still being read has
// shown its next one. A shard may have read further, past items its
// filter removed; that counts only when the run stopped at its page
// budget, so that pages without items still advance: otherwise the next
// Page reads that stretch again and finds what was written there since.
func (r *run) reached(sh *shardState, last *position) (*position, error) {
	at := sh.start
	moved := []map[string]types.AttributeValue{sh.pos}
	if r.spent {
		moved = append(moved, sh.readTo)
	}
	for _, m := range moved {
		if m == nil {
			continue
		}
		pos, err := r.p.positionOf(sh.ord, m)
		if err != nil {
			return nil, err
		}
		at = r.p.later(at, pos)
	}
	if r.p.ordered && !sh.failed && last != nil && last.ord != sh.ord {
		at = r.p.later(at, last)
	}
	return at, nil
}

func (r *run) partialErr() error { return partialError(r.failures) }

// partialError is nil without failures, else a *PartialError.
func partialError(failures []*ShardError) error {
	if len(failures) == 0 {
		return nil
	}
	errs := append([]*ShardError(nil), failures...)
	// Suffix order, whatever order they failed in.
	for i := 1; i < len(errs); i++ {
		for j := i; j > 0 && errs[j].Suffix < errs[j-1].Suffix; j-- {
			errs[j], errs[j-1] = errs[j-1], errs[j]
		}
	}
	return &PartialError{Errs: errs}
}
