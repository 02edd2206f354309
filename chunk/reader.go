package chunk

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"

	"github.com/klauspost/compress/zstd"

	"github.com/dynashard/dynashard/internal/adapt"
	"github.com/dynashard/dynashard/internal/observe"
)

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

	// stream marks a Reader of Open, whose reads are a logical call of
	// their own: call, opened by the first Read (began) and closed at the
	// payload's end, a sticky error or Close (ended).
	stream, began, ended bool
	call                 observe.Call

	p         parent
	m         medium   // where p's stored bytes are
	at        int64    // m's position: chunks fetched, object bytes fetched, 1 once the inline payload was
	window    [][]byte // fetched stored bytes not yet taken
	stored    int64    // stored bytes taken from the windows
	unread    []byte   // a raw payload's bytes taken but not yet returned by Read
	undecoded []byte   // a compressed payload's stored bytes taken but not yet decoded
	dec       io.Reader
	hash      hash.Hash
	delivered int64 // payload bytes taken, hashed and counted
	err       error // sticky
}

// Info describes the version being read.
func (r *Reader) Info() Info { return r.p.Info }

// Close releases the Reader's buffers. It never fails; reading afterwards
// does.
func (r *Reader) Close() error {
	r.endCall()
	r.window, r.unread, r.undecoded, r.p.inline = nil, nil, nil, nil
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
	r.m = p.placement().medium()
	r.at, r.stored, r.delivered = 0, 0, 0
	r.window, r.unread, r.undecoded = nil, nil, nil
	r.hash = sha256.New()
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
	if r.stream && !r.began && r.err == nil {
		r.began = true
		r.ctx, r.call = r.s.start(r.ctx, "chunk.Read")
		if r.call.Traced() {
			r.s.traceKey(r.call, r.key)
		}
	}
	n, err := r.read(b)
	if err != nil {
		r.endCall()
	}
	return n, err
}

// endCall closes the call of an Open's Reader, once: successful if the
// payload was read to its end (or the Reader closed before an error).
func (r *Reader) endCall() {
	if !r.began || r.ended {
		return
	}
	r.ended = true
	err := r.err
	if err == io.EOF {
		err = nil
	}
	end(r.ctx, r.call, Info{Chunks: r.p.Chunks, Size: r.delivered}, err)
}

func (r *Reader) read(b []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if err := r.ctxErr(); err != nil {
		return 0, r.fail(err)
	}
	if len(b) == 0 {
		return 0, nil
	}
	if r.p.Compression != None {
		p, err := r.take(b)
		return len(p), err
	}
	for len(r.unread) == 0 {
		p, err := r.take(nil)
		if err != nil {
			return 0, err
		}
		r.unread = p
	}
	n := copy(b, r.unread)
	r.unread = r.unread[n:]
	return n, nil
}

// take returns the next payload bytes: for a raw payload the next stored
// piece itself (b unused), for a compressed one what the decoder writes
// into b. Each piece is hashed and counted as it is taken, so the payload
// is verified in the one pass that reads it: its length so far at every
// piece, its length and SHA-256 at the end, before io.EOF (with the last
// bytes or after them). A version replaced before any byte was taken is
// followed to the new one. Errors are sticky.
func (r *Reader) take(b []byte) ([]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	if err := r.ctxErr(); err != nil {
		return nil, r.fail(err)
	}
	var p []byte
	var err error
	if r.p.Compression == None {
		p, err = r.takeStored()
	} else {
		if r.dec == nil {
			if r.dec, err = newDecoder(r.p.Compression, storedStream{r}); err != nil {
				return nil, r.fail(err)
			}
		}
		var n int
		n, err = r.dec.Read(b)
		p = b[:n]
	}
	if len(p) > 0 {
		r.hash.Write(p)
		r.delivered += int64(len(p))
		if r.p.Size >= 0 && r.delivered > r.p.Size {
			return nil, r.fail(r.corrupt(0, fmt.Sprintf("payload longer than the %d bytes recorded", r.p.Size)))
		}
	}
	switch {
	case err == nil:
		return p, nil
	case err == io.EOF:
		if err := r.verify(); err != nil {
			return p, r.fail(err)
		}
		r.err = io.EOF
		return p, io.EOF
	}
	var rep *replacedError
	if errors.As(err, &rep) && r.delivered == 0 && len(p) == 0 {
		if err := r.reload(); err != nil {
			return nil, err
		}
		return r.take(b)
	}
	return p, r.fail(err)
}

// takeStored returns the next stored bytes of the version, in order: io.EOF
// after the last.
func (r *Reader) takeStored() ([]byte, error) {
	for len(r.window) == 0 {
		if err := r.ctxErr(); err != nil {
			return nil, err
		}
		w, err := r.m.fetch(r)
		if err != nil {
			return nil, err
		}
		r.window = w
	}
	c := r.window[0]
	r.window[0] = nil // let a taken chunk go before the window ends
	r.window = r.window[1:]
	r.stored += int64(len(c))
	if r.p.StoredSize >= 0 && r.stored > r.p.StoredSize {
		return nil, r.corrupt(0, fmt.Sprintf("more than the %d stored bytes recorded", r.p.StoredSize))
	}
	return c, nil
}

// fail makes err sticky, translating decoder faults to corruption.
func (r *Reader) fail(err error) error {
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
	return err
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
	if r.p.Compression != None && (len(r.undecoded) > 0 || len(r.window) > 0 || r.m.more(r)) {
		// The compressed stream must have used every stored byte.
		return r.corrupt(0, "bytes after the end of the compressed stream")
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

// storedStream is the stored bytes of a compressed payload, in order, for
// its decoder.
type storedStream struct{ r *Reader }

func (s storedStream) Read(b []byte) (int, error) {
	r := s.r
	for len(r.undecoded) == 0 {
		c, err := r.takeStored()
		if err != nil {
			return 0, err
		}
		r.undecoded = c
	}
	n := copy(b, r.undecoded)
	r.undecoded = r.undecoded[n:]
	return n, nil
}
