package chunk

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Get returns the payload stored under key, verified: its length and
// SHA-256 match the parent item, so it is exactly what one Put stored. If
// the version it reads is replaced and its chunks deleted while it reads,
// Get starts again with the new one, at most Options.ReadAttempts times,
// then fails with ErrConflict. It reads the parent eventually consistently
// unless Options.ConsistentRead; optFns change the Store's Options for this
// call. It returns ErrNotFound if key holds no payload and a *CorruptError
// if the stored payload fails verification.
func (s *Store) Get(ctx context.Context, key Key, optFns ...func(*Options)) (data []byte, info Info, err error) {
	ctx, call := s.start(ctx, "chunk.Get")
	defer func() { end(ctx, call, info, err) }()
	if call.Traced() {
		s.traceKey(call, key)
	}
	s, err = s.begin(ctx, "Get", optFns)
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
func (s *Store) Resolve(ctx context.Context, key Key, item map[string]types.AttributeValue, optFns ...func(*Options)) (data []byte, info Info, err error) {
	ctx, call := s.start(ctx, "chunk.Resolve")
	defer func() { end(ctx, call, info, err) }()
	if call.Traced() {
		s.traceKey(call, key)
	}
	s, err = s.begin(ctx, "Resolve", optFns)
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
		data, err := r.whole()
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

// whole reads the rest of r's payload, verified, and returns it in one
// buffer allocated once, at the length read: the pieces it is read in (a
// raw payload's stored chunks themselves, a compressed one's decoded
// blocks) are kept until the payload is whole and verified, so memory
// follows the bytes that arrive, never the size a parent claims.
func (r *Reader) whole() ([]byte, error) {
	var pieces [][]byte
	for block := 64 << 10; ; {
		var buf []byte
		if r.p.Compression != None {
			buf = make([]byte, block)
			block = min(2*block, 4<<20)
		}
		p, err := r.fill(buf)
		if len(p) > 0 {
			pieces = append(pieces, p)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	data := make([]byte, 0, r.delivered)
	for _, p := range pieces {
		data = append(data, p...)
	}
	return data, nil
}

// fill returns the next payload bytes of r: for a raw payload the next
// stored piece (buf unused), for a compressed one buf filled as far as the
// payload goes. At the end it returns io.EOF, with the last bytes or after
// them.
func (r *Reader) fill(buf []byte) ([]byte, error) {
	if r.p.Compression == None {
		return r.take(nil)
	}
	n := 0
	for n < len(buf) {
		p, err := r.take(buf[n:])
		n += len(p)
		if err != nil {
			return buf[:n], err
		}
	}
	return buf, nil
}

// Open returns a Reader streaming the payload stored under key, having read
// the parent item (and nothing else) to fail early with ErrNotFound. It
// reads the parent eventually consistently unless Options.ConsistentRead;
// optFns change the Store's Options for this call and its Reader.
//
// The Reader uses ctx for all its requests, until it is closed: like a
// response body, it outlives the call that opened it. Its reads are a
// logical call of their own (see dynashard.Usage), from the first Read
// to the end of the payload, an error or Close.
func (s *Store) Open(ctx context.Context, key Key, optFns ...func(*Options)) (r *Reader, err error) {
	octx, call := s.start(ctx, "chunk.Open")
	defer func() { call.End(octx, err) }()
	if call.Traced() {
		s.traceKey(call, key)
	}
	s, err = s.begin(ctx, "Open", optFns)
	if err != nil {
		return nil, err
	}
	if r, err = s.open(octx, key); err != nil {
		return nil, err
	}
	r.ctx, r.stream = ctx, true
	return r, nil
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
