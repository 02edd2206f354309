package scatter

import (
	"slices"

	"github.com/dynashard/dynashard/internal/keyorder"
	"github.com/dynashard/dynashard/shard"
)

// A base's shard count may change (shard.Table.Reshard): a call reads the
// suffixes of every count in the base's history, which the layout check
// reads, so the plan is widened after it, and a cursor decoded before it.

// widen makes the plan read base's history h: without Options.Suffixes,
// suffixes 1..max(h), the union of every count's suffixes, each physical
// key once. Called after the layout check, which reads h.
func (p *plan) widen(h []int) error {
	p.history = h
	n, newest := slices.Max(h), h[len(h)-1]
	// Under Random a Rebalance moves only the items of suffixes above the
	// newest count: a base whose newest count is its largest has none.
	p.twice = len(h) > 1 && p.skAttr != "" && p.l.Index == "" && (p.byKey() || n > newest)
	p.home = nil
	if rs, ok := p.l.Strategy.(shard.Resizable); ok && p.twice && p.byKey() && sortKind(p.l) == keyorder.S {
		p.home = rs.WithN(newest)
	}
	if len(p.o.Suffixes) > 0 || n == len(p.suffixes) {
		return nil
	}
	p.suffixes = make([]int, n)
	for i := range n {
		p.suffixes[i] = i + 1
	}
	return p.keys(p.base)
}

// decodeEarly is decodeCursor for a plan whose suffixes are not known yet:
// without Options.Suffixes a call reads the suffixes of the base's
// history, which the layout check reads, so positions are decoded against
// every suffix a base may have (1..shard.MaxN, where a shard's ordinal is
// its suffix - 1, as in the final plan; nothing of that size is
// allocated), and Page fits them to the base's suffixes after the check
// (resume.fit).
func decodeEarly(p *plan, c Cursor, key []byte) (resume, error) {
	if len(p.o.Suffixes) == 0 {
		wide := *p
		wide.anySuffix = true
		p = &wide
	}
	return decodeCursor(p, c, key)
}

// fit checks a decoded resume against p's suffixes, once the layout check
// has set them: a cursor made before a Reshard names suffixes the base
// still has (its history only grows until a Rebalance retires counts),
// and one naming a suffix a Rebalance has retired is out of range.
func (res resume) fit(p *plan) (resume, error) {
	n := len(p.suffixes)
	if res.starts == nil {
		return res, nil
	}
	out := func(pos *position) bool { return pos != nil && pos.ord >= n }
	if out(res.def) {
		return resume{}, cursorErr(CursorOutOfRange, "position in suffix %d, which base %q no longer has", res.def.ord+1, p.base)
	}
	for ord, pos := range res.starts {
		if out(pos) || ord >= n && pos != res.def {
			return resume{}, cursorErr(CursorOutOfRange, "suffix %d, which base %q no longer has", ord+1, p.base)
		}
	}
	if len(res.starts) > n {
		res.starts = res.starts[:n]
	}
	for len(res.starts) < n { // shards after the last one listed stand at def
		res.starts = append(res.starts, res.def)
	}
	return res, nil
}
