package chunk

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/klauspost/compress/zstd"

	"github.com/dynashard/dynashard/internal/adapt"
)

// Get returns the payload stored under key, verified: its length and
// SHA-256 match the parent item, so it is exactly what one Put stored. If
// the version it reads is replaced and its chunks deleted while it reads,
// Get starts again with the new one, at most Options.ReadAttempts times,
// then fails with ErrConflict. It reads the parent eventually consistently
// unless Options.ConsistentRead; optFns change the Store's Options for this
// call. It returns ErrNotFound if key holds no payload and a *CorruptError
// if the stored payload fails verification.
func (s *Store) Get(ctx context.Context, key Key, optFns ...func(*Options)) ([]byte, Info, error) {
	s, err := s.begin(ctx, "Get", optFns)
	if err != nil {
		return nil, Info{}, err
	}
	r, err := s.open(ctx, key)
	if err != nil {
		return nil, Info{}, err
	}
	return s.readFull(r)
}

// Resolve returns the payload of a parent item the caller has already read,
// for instance with a Query listing many parents: a payload kept inline
// costs no request, a chunked one only its chunks' BatchGetItems. The item
// must be the parent stored under key, as DynamoDB returned it (a
// projection must keep the store's attributes). If its version has been
// replaced since, Resolve moves on to the current one, as Get does. optFns
// change the Store's Options for this call. It returns ErrNotFound if the
// item holds no payload.
func (s *Store) Resolve(ctx context.Context, key Key, item map[string]types.AttributeValue, optFns ...func(*Options)) ([]byte, Info, error) {
	s, err := s.begin(ctx, "Resolve", optFns)
	if err != nil {
		return nil, Info{}, err
	}
	prefix, err := s.keyPrefix(key)
	if err != nil {
		return nil, Info{}, err
	}
	p, ok, err := s.parseParent(key, item)
	if err != nil {
		return nil, Info{}, err
	}
	if !ok {
		return nil, Info{}, fmt.Errorf("%w: key %v", ErrNotFound, key)
	}
	return s.readFull(s.newReader(ctx, key, prefix, p))
}

// readFull reads r's payload whole, starting again with the current
// version when the one being read is replaced under it.
func (s *Store) readFull(r *Reader) ([]byte, Info, error) {
	defer r.Close()
	for {
		hint := r.p.Size
		if hint < 0 {
			hint = s.opts.MaxSize // the guide's layout records no length
		}
		data, err := readAll(r, min(hint, s.opts.MaxSize))
		if err == nil {
			info := r.p.Info
			if info.Size < 0 {
				info.Size, info.StoredSize = int64(len(data)), r.stored
			}
			return data, info, nil
		}
		if !errors.Is(err, ErrConflict) || r.attempts >= s.opts.ReadAttempts {
			return nil, Info{}, err
		}
		if err := r.reload(); err != nil {
			return nil, Info{}, err
		}
	}
}

// readAll reads r to the end, expecting n bytes. The buffer grows with
// the bytes that arrive, doubling, but to no more than n+1 bytes while
// that is enough (+1: the final read, which returns io.EOF, needs room
// too): a size claimed by a damaged parent is never allocated ahead of the
// data.
func readAll(r io.Reader, n int64) ([]byte, error) {
	buf := make([]byte, 0, min(n+1, 64<<10))
	for {
		if len(buf) == cap(buf) {
			size := 2 * int64(cap(buf))
			if int64(cap(buf)) < n+1 {
				size = min(size, n+1)
			}
			buf = append(make([]byte, 0, size), buf...)
		}
		m, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// Open returns a Reader streaming the payload stored under key, having read
// the parent item (and nothing else) to fail early with ErrNotFound. It
// reads the parent eventually consistently unless Options.ConsistentRead;
// optFns change the Store's Options for this call and its Reader.
//
// The Reader uses ctx for all its requests, until it is closed: like a
// response body, it outlives the call that opened it.
func (s *Store) Open(ctx context.Context, key Key, optFns ...func(*Options)) (*Reader, error) {
	s, err := s.begin(ctx, "Open", optFns)
	if err != nil {
		return nil, err
	}
	return s.open(ctx, key)
}

func (s *Store) open(ctx context.Context, key Key) (*Reader, error) {
	prefix, err := s.keyPrefix(key)
	if err != nil {
		return nil, err
	}
	p, err := s.readParent(ctx, key, s.opts.ConsistentRead)
	if err != nil {
		return nil, err
	}
	return s.newReader(ctx, key, prefix, p), nil
}

func (s *Store) newReader(ctx context.Context, key Key, prefix string, p parent) *Reader {
	// Chunks written by a Store with a smaller ChunkSize are readable even
	// if this Store's ChunkSize is too large for key (an error here).
	_, overhead, _ := s.chunkTemplate(key, prefix)
	r := &Reader{s: s, ctx: ctx, key: key, prefix: prefix, overhead: overhead, attempts: 1}
	r.reset(p)
	return r
}

// Reader streams one version of a stored payload. Bytes are returned as
// they arrive, before the whole payload is verified: only a final io.EOF
// (rather than a *CorruptError) confirms that the bytes read are the
// payload. Chunks are fetched in windows of at most 32 MiB of stored bytes,
// each window read by BatchGetItem requests as full as DynamoDB allows (40
// chunks at the default ChunkSize), in parallel, at most MaxConcurrency of
// them; the next window is fetched only when the last one has been read: a
// Reader holds at most one window of chunks, whatever the payload's size.
//
// Once the Reader's ctx is done, Read returns its error (wrapped) and no
// more bytes, even from chunks already fetched.
//
// If the version is replaced and its chunks deleted before any byte has
// been returned, the Reader moves to the new version (Info changes);
// afterwards, Read fails with ErrConflict. A Reader is not safe for
// concurrent use.
type Reader struct {
	s        *Store
	ctx      context.Context
	key      Key
	prefix   string
	overhead int // the most bytes a chunk item of key adds to its data
	attempts int // versions tried

	lim *adapt.Limiter // BatchGetItem calls in flight (see ReadStats)

	p         parent
	next      int      // next chunk to fetch, 1-based
	objOff    int64    // next stored byte to fetch of an offloaded payload
	window    [][]byte // fetched chunks not yet read
	cur       []byte
	inlined   bool  // the inline payload has been handed out
	stored    int64 // stored bytes handed to the decoder
	dec       io.Reader
	hash      hash.Hash
	delivered int64
	err       error // sticky
}

// Info describes the version being read.
func (r *Reader) Info() Info { return r.p.Info }

// Close releases the Reader's buffers. It never fails; reading afterwards
// does.
func (r *Reader) Close() error {
	r.window, r.cur, r.p.inline = nil, nil, nil
	if z, ok := r.dec.(zstdReader); ok {
		z.d.Close()
	}
	if r.err == nil || r.err == io.EOF {
		r.err = errors.New("chunk: read after Close")
	}
	return nil
}

func (r *Reader) reset(p parent) {
	r.p = p
	r.next = 1
	r.objOff = 0
	r.window, r.cur, r.inlined, r.stored = nil, nil, false, 0
	r.hash = sha256.New()
	r.delivered = 0
	r.err = nil
	r.dec = nil
}

// reload re-reads the parent consistently and starts over with its version.
func (r *Reader) reload() error {
	if r.attempts >= r.s.opts.ReadAttempts {
		r.err = fmt.Errorf("%w: key %v: replaced %d times while being read", ErrConflict, r.key, r.attempts)
		return r.err
	}
	r.attempts++
	p, err := r.s.readParent(r.ctx, r.key, true)
	if err != nil {
		r.err = err
		return err
	}
	r.reset(p)
	return nil
}

// Read implements io.Reader.
func (r *Reader) Read(b []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if err := r.ctxErr(); err != nil {
		return r.fail(err)
	}
	if r.dec == nil {
		dec, err := newDecoder(r.p.Compression, storedStream{r})
		if err != nil {
			return r.fail(err)
		}
		r.dec = dec
	}
	n, err := r.dec.Read(b)
	if n > 0 {
		r.hash.Write(b[:n])
		r.delivered += int64(n)
		if r.p.Size >= 0 && r.delivered > r.p.Size {
			return r.fail(r.corrupt(0, fmt.Sprintf("payload longer than the %d bytes recorded", r.p.Size)))
		}
	}
	switch {
	case err == nil:
		return n, nil
	case err == io.EOF:
		if err := r.verify(); err != nil {
			_, err = r.fail(err)
			return n, err
		}
		r.err = io.EOF
		return n, io.EOF
	}
	var rep *replacedError
	if errors.As(err, &rep) && r.delivered == 0 && n == 0 {
		if err := r.reload(); err != nil {
			return 0, err
		}
		return r.Read(b)
	}
	_, err = r.fail(err)
	return n, err
}

// fail makes err sticky, translating decoder faults to corruption.
func (r *Reader) fail(err error) (int, error) {
	var se streamError
	var ce *CorruptError
	var rep *replacedError
	switch {
	case errors.As(err, &rep):
		if rep.gone {
			err = fmt.Errorf("%w: key %v: deleted while being read", ErrNotFound, r.key)
		} else {
			err = fmt.Errorf("%w: key %v: version %s replaced by %s while being read", ErrConflict, r.key, r.p.Version, rep.p.Version)
		}
	case errors.As(err, &ce):
	case errors.As(err, &se):
		err = se.err
	default:
		// Anything else comes from the decoder, about the stored bytes.
		err = r.corrupt(0, "decoding "+string(r.p.Compression)+": "+err.Error())
	}
	r.err = err
	return 0, err
}

// ctxErr returns the Reader's ctx error, if ctx is done, as a stream error.
func (r *Reader) ctxErr() error {
	if err := r.ctx.Err(); err != nil {
		return streamError{fmt.Errorf("chunk: get %v: %w", r.key, err)}
	}
	return nil
}

func (r *Reader) corrupt(seq int, why string) *CorruptError {
	return &CorruptError{Key: r.key, Version: r.p.Version, Seq: seq, Reason: why}
}

// verify checks the whole payload at its end.
func (r *Reader) verify() error {
	if r.p.StoredSize >= 0 && r.stored != r.p.StoredSize {
		return r.corrupt(0, fmt.Sprintf("stored bytes %d, parent says %d", r.stored, r.p.StoredSize))
	}
	if r.p.Size >= 0 && r.delivered != r.p.Size {
		return r.corrupt(0, fmt.Sprintf("payload is %d bytes, parent says %d", r.delivered, r.p.Size))
	}
	if r.p.Compression != None {
		// The compressed stream must have used every stored byte.
		if len(r.cur) > 0 || len(r.window) > 0 || r.next <= r.p.Chunks || r.objOff < r.p.StoredSize && r.p.Object != "" {
			return r.corrupt(0, "bytes after the end of the compressed stream")
		}
	}
	if r.p.NoChecksum {
		return nil // the guide's layout: the chunk count was checked as they were read
	}
	var sum [sha256.Size]byte
	r.hash.Sum(sum[:0])
	if sum != r.p.SHA256 {
		return r.corrupt(0, "SHA-256 mismatch")
	}
	return nil
}

// newDecoder returns a reader of the payload stored in stored with
// compression c. A zstd decoder runs synchronously, in the caller's
// goroutine, and refuses frames whose window is above zstdWindow.
func newDecoder(c Compression, stored io.Reader) (io.Reader, error) {
	switch c {
	case Gzip:
		return gzip.NewReader(stored)
	case Zstd:
		zr, err := zstd.NewReader(stored, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(zstdWindow))
		if err != nil {
			return nil, err
		}
		return zstdReader{zr}, nil
	}
	return stored, nil
}

// zstdReader hides zstd.Decoder's WriteTo, which io.Copy would otherwise
// prefer to Reader.Read, and releases the decoder at the end of the stream.
type zstdReader struct{ d *zstd.Decoder }

func (z zstdReader) Read(p []byte) (int, error) {
	n, err := z.d.Read(p)
	if err != nil {
		z.d.Close()
	}
	return n, err
}

// streamError carries an error of the stored stream through the decoder,
// so it is not mistaken for a decoding fault.
type streamError struct{ err error }

func (e streamError) Error() string { return e.err.Error() }
func (e streamError) Unwrap() error { return e.err }

// replacedError reports that the version being read is gone: p is the
// parent now, or gone is true if there is no payload any more.
type replacedError struct {
	p    parent
	gone bool
}

func (e *replacedError) Error() string { return "chunk: version replaced" }

// storedStream reads the stored bytes of the Reader's version in order.
type storedStream struct{ r *Reader }

func (s storedStream) Read(b []byte) (int, error) {
	r := s.r
	for len(r.cur) == 0 {
		if err := r.ctxErr(); err != nil {
			return 0, err
		}
		switch {
		case len(r.window) > 0:
			r.cur = r.window[0]
			r.window[0] = nil // let a consumed chunk go before the window ends
			r.window = r.window[1:]
		case r.p.Object != "":
			if err := r.fetchObject(); err != nil { // io.EOF at the end
				return 0, err
			}
		case r.p.Chunks == 0:
			if r.inlined {
				return 0, io.EOF
			}
			r.inlined = true
			r.cur = r.p.inline
			if len(r.cur) == 0 {
				return 0, io.EOF
			}
		case r.next > r.p.Chunks:
			return 0, io.EOF
		default:
			if err := r.fetch(); err != nil {
				return 0, err
			}
		}
	}
	n := copy(b, r.cur)
	r.cur = r.cur[n:]
	r.stored += int64(n)
	if r.p.StoredSize >= 0 && r.stored > r.p.StoredSize {
		return n, r.corrupt(0, fmt.Sprintf("more than the %d stored bytes recorded", r.p.StoredSize))
	}
	return n, nil
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
	requests = int(min(int64(r.s.opts.MaxConcurrency), max(1, maxReadWindow/(int64(perRequest)*item))))
	return perRequest, requests
}

// fetch reads the next window of chunks. A chunk that is missing is read
// again consistently (it may be too new for an eventually consistent
// read); if it is still missing the parent is read again: a new version
// means ours was replaced, the same one means the payload is damaged.
func (r *Reader) fetch() error {
	s := r.s
	perRequest, requests := r.windowSize()
	// The window's BatchGetItem calls take slots of the Reader's limiter,
	// which halves when DynamoDB throttles them (see ReadStats).
	lim := r.limiter(requests)
	r.s = s.limitedReads(lim)
	defer func() { r.s = s; s.reads.settle(lim) }()
	last := min(r.p.Chunks, r.next+perRequest*requests-1)
	keys := make([]string, 0, last-r.next+1)
	for seq := r.next; seq <= last; seq++ {
		keys = append(keys, chunkKey(r.prefix, r.p.Version, seq))
	}
	// As few requests as the window's chunks need, evenly filled.
	requests = (len(keys) + perRequest - 1) / perRequest
	perRequest = (len(keys) + requests - 1) / requests
	found, err := r.getChunks(keys, perRequest, false)
	if err != nil {
		return streamError{fmt.Errorf("chunk: get %v: reading chunks: %w", r.key, err)}
	}
	var missing []string
	for _, k := range keys {
		if _, ok := found[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		again, err := r.getChunks(missing, perRequest, true)
		if err != nil {
			return streamError{fmt.Errorf("chunk: get %v: reading chunks: %w", r.key, err)}
		}
		missing = missing[:0]
		for k, d := range again {
			found[k] = d
		}
		for _, k := range keys {
			if _, ok := found[k]; !ok {
				missing = append(missing, k)
			}
		}
	}
	if len(missing) > 0 {
		p, err := s.readParent(r.ctx, r.key, true)
		switch {
		case errors.Is(err, ErrNotFound):
			return &replacedError{gone: true}
		case err != nil:
			return streamError{err}
		case p.Version != r.p.Version:
			return &replacedError{p: p}
		}
		// The seq from the key's place in the window, not from parsing it:
		// the guide's layout has versions of its own.
		return r.corrupt(r.next+slices.Index(keys, missing[0]), "chunk missing")
	}
	window := make([][]byte, 0, len(keys))
	for i, k := range keys {
		d := found[k]
		if len(d) == 0 {
			return r.corrupt(r.next+i, "chunk has no data")
		}
		window = append(window, d)
	}
	r.window = slices.Clip(window)
	r.next = last + 1
	return nil
}
