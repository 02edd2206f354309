package chunk

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/observe"
)

// chunkItems is the medium of a payload cut into chunk items in the chunk
// table, in this package's layout or the guide's: written with
// BatchWriteItem, read with BatchGetItem in windows, swept by a Scan.
type chunkItems struct{}

// store streams src's chunks into the chunk table, first being the first
// one.
func (chunkItems) store(ctx context.Context, w *write, src chunkSource, first []byte) error {
	var srcErr error
	items := func(yield func(map[string]types.AttributeValue) bool) {
		for c := first; len(c) > 0; {
			if w.chunks == w.s.maxChunks {
				srcErr = errPayloadTooLarge
				return
			}
			w.chunks++
			if !yield(w.s.chunkItem(w.parentKey, chunkKey(w.prefix, w.version, w.chunks), c)) {
				return
			}
			var err error
			if c, err = src.next(); err != nil && err != io.EOF {
				srcErr = err
				return
			}
		}
	}
	// The batch engine fails a call it stopped before the sequence ended
	// (ctx done), so nil means every chunk was written.
	err := w.s.putItems(ctx, items)
	switch {
	case srcErr != nil:
		return w.sourceError(srcErr)
	case err != nil:
		return fmt.Errorf("chunk: put %v: writing chunks of version %s: %w", w.key, w.version, err)
	}
	return nil
}

// chunkItem is the chunk item with key k holding data, in the layout Put
// writes: data in attribute Data (B), or in the guide's layout in
// Options.Guide's data attribute, of its type.
func (s *Store) chunkItem(parentKey types.AttributeValue, k string, data []byte) map[string]types.AttributeValue {
	var v types.AttributeValue = &types.AttributeValueMemberB{Value: data}
	if s.guideWrites() {
		v = typed(s.opts.Guide.DataType, data)
	}
	return map[string]types.AttributeValue{
		s.opts.ChunkKeyAttribute: &types.AttributeValueMemberS{Value: k},
		s.dataAttribute():        v,
		attrParent:               parentKey, // ignored by readers of the guide
	}
}

func (chunkItems) more(r *Reader) bool { return r.at < int64(r.p.Chunks) }

func (chunkItems) remove(ctx context.Context, s *Store, ids []string) error {
	return s.deleteItems(ctx, ids)
}

func (chunkItems) ids(prefix string, pl placement) []string {
	keys := make([]string, pl.chunks)
	for i := range keys {
		keys[i] = chunkKey(prefix, pl.version, i+1)
	}
	return keys
}

// maxReadWindow bounds the stored bytes a Reader fetches at once: two
// full BatchGetItem requests at the default ChunkSize (2 × 40 chunks of
// 384 KiB), so that a 64 MiB payload takes the fewest requests possible
// (5), two at a time.
const maxReadWindow = 32 << 20

// windowSize returns how many chunks one BatchGetItem request of the next
// window asks for and how many such requests the window holds. A request
// asks for as many chunks as one response can return whole (groupSize of
// the largest chunk item the parent allows: its ChunkSize, or what its
// sizes allow when it records none); the window holds as
// many full requests as fit maxReadWindow bytes of chunks, at least one and
// at most MaxConcurrency.
func (r *Reader) windowSize() (perRequest, requests int) {
	item := r.p.chunkBound() + int64(r.overhead)
	perRequest = groupSize(item)
	window := cmp.Or(r.s.readWindow, maxReadWindow)
	requests = int(min(int64(r.s.opts.MaxConcurrency), max(1, window/(int64(perRequest)*item))))
	return perRequest, requests
}

// fetch reads the next window of chunks. A chunk that is missing is read
// again consistently (it may be too new for an eventually consistent
// read); if it is still missing the parent is read again: a new version
// means ours was replaced, the same one means the payload is damaged.
func (chunkItems) fetch(r *Reader) ([][]byte, error) {
	if r.at >= int64(r.p.Chunks) {
		return nil, io.EOF
	}
	s := r.s
	perRequest, requests := r.windowSize()
	// The window's BatchGetItem calls take slots of the Reader's limiter,
	// which halves when DynamoDB throttles them (see ReadStats).
	lim := r.limiter(requests)
	r.s = s.limitedReads(lim)
	defer func() { r.s = s; s.reads.record(lim) }()
	next := int(r.at) + 1
	last := min(r.p.Chunks, next+perRequest*requests-1)
	keys := make([]string, 0, last-next+1)
	for seq := next; seq <= last; seq++ {
		keys = append(keys, chunkKey(r.prefix, r.p.Version, seq))
	}
	// As few requests as the window's chunks need, evenly filled.
	requests = (len(keys) + perRequest - 1) / perRequest
	perRequest = (len(keys) + requests - 1) / requests
	found, err := r.getChunks(keys, perRequest, false)
	if err != nil {
		return nil, streamError{fmt.Errorf("chunk: get %v: reading chunks: %w", r.key, err)}
	}
	missing := absent(keys, found)
	if len(missing) > 0 {
		again, err := r.getChunks(missing, perRequest, true)
		if err != nil {
			return nil, streamError{fmt.Errorf("chunk: get %v: reading chunks: %w", r.key, err)}
		}
		for k, d := range again {
			found[k] = d
		}
		missing = absent(keys, found)
	}
	if len(missing) > 0 {
		// The seq from the key's place in the window, not from parsing it:
		// the guide's layout has versions of its own.
		return nil, r.missing(next+slices.Index(keys, missing[0]), "chunk missing")
	}
	window := make([][]byte, 0, len(keys))
	for i, k := range keys {
		d := found[k]
		if len(d) == 0 {
			return nil, r.corrupt(next+i, "chunk has no data")
		}
		window = append(window, d)
	}
	r.at = int64(last)
	return window, nil
}

// absent returns the keys that found lacks.
func absent(keys []string, found map[string][]byte) []string {
	var missing []string
	for _, k := range keys {
		if _, ok := found[k]; !ok {
			missing = append(missing, k)
		}
	}
	return missing
}

// getChunks reads chunks of the Reader's version: from the attribute of
// the layout its parent is in.
func (r *Reader) getChunks(keys []string, group int, consistent bool) (map[string][]byte, error) {
	attr, typ := attrData, types.ScalarAttributeTypeB
	if r.p.guide {
		attr, typ = r.s.opts.Guide.DataAttribute, r.s.opts.Guide.DataType
	}
	return r.s.getItems(r.ctx, keys, group, consistent, attr, typ)
}

// sweepSegment scans one segment of the chunk table (of total) for Sweep.
func (chunkItems) sweepSegment(ctx context.Context, sw *sweep, seg, total int) error {
	s := sw.s
	in := &dynamodb.ScanInput{
		TableName:                &s.chunks,
		ProjectionExpression:     aws.String("#k, #p"),
		ExpressionAttributeNames: map[string]string{"#k": s.opts.ChunkKeyAttribute, "#p": attrParent},
	}
	if total > 1 {
		in.Segment, in.TotalSegments = aws.Int32(int32(seg)), aws.Int32(int32(total))
	}
	for {
		out, err := observe.Do(ctx, s.c.Scan, in)
		if err != nil {
			return fmt.Errorf("chunk: sweep: scan %s: %w", s.chunks, err)
		}
		page, t := chunkItems{}.candidates(s, out.Items)
		if err := sw.judge(ctx, chunkItems{}, page, t, &sw.chunks); err != nil {
			return err
		}
		if len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// candidates turns a page of scanned chunk items into what Sweep judges;
// t counts the items and those this package did not write.
func (chunkItems) candidates(s *Store, items []map[string]types.AttributeValue) (page []candidate, t tally) {
	t.listed = len(items)
	for _, item := range items {
		k, ok := asS(item[s.opts.ChunkKeyAttribute])
		pk, ok2 := item[attrParent].(*types.AttributeValueMemberM)
		if !ok || !ok2 {
			t.foreign++
			continue
		}
		prefix, version, _, err := parseChunkKey(k.Value)
		if err != nil {
			t.foreign++
			continue
		}
		key, ok := keyFromParent(pk.Value, prefix)
		if !ok {
			t.foreign++
			continue
		}
		created, _ := versionTime(version)
		page = append(page, candidate{id: k.Value, key: key, version: version, created: created})
	}
	return page, t
}

// keyFromParent rebuilds a Key from a chunk's Parent attribute, checking
// that it renders to the chunk key's prefix. A map has no order, so with two
// attributes both orders are tried; if both render the prefix, either
// names the same item.
func keyFromParent(m map[string]types.AttributeValue, prefix string) (Key, bool) {
	var names []string
	for n := range m {
		names = append(names, n)
	}
	var candidates []Key
	switch len(names) {
	case 1:
		candidates = []Key{{PartitionName: names[0], Partition: m[names[0]]}}
	case 2:
		a, b := names[0], names[1]
		candidates = []Key{
			{PartitionName: a, Partition: m[a], SortName: b, Sort: m[b]},
			{PartitionName: b, Partition: m[b], SortName: a, Sort: m[a]},
		}
	}
	for _, k := range candidates {
		if p, err := k.prefix(); err == nil && p == prefix {
			return k, true
		}
	}
	return Key{}, false
}

// missing reports stored bytes of the Reader's version that are gone (the
// chunk seq, or 0 for an object): if the parent, read again consistently,
// holds another version or none, the version was replaced (or deleted)
// under the Reader; if it still holds this one, the payload is damaged.
func (r *Reader) missing(seq int, why string) error {
	p, err := r.s.readParent(r.ctx, r.key, true)
	switch {
	case errors.Is(err, ErrNotFound):
		return &replacedError{gone: true}
	case err != nil:
		return streamError{err}
	case p.Version != r.p.Version:
		return &replacedError{p: p}
	}
	return r.corrupt(seq, why)
}
