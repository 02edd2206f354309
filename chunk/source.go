package chunk

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"errors"
	"hash"
	"io"

	"github.com/klauspost/compress/zstd"
)

// source cuts a payload into stored chunks. Chunks before the last are
// exactly size bytes, so a shorter chunk is always the last one. Each chunk
// is a slice nobody else writes to: of the caller's []byte when stored as
// is, freshly allocated otherwise (the batch engine may still hold earlier
// ones).
//
// With a Compression set, the first next reads a probe of the payload (up
// to max(ChunkSize, MinCompressSize) bytes) and decides how the whole
// payload is stored (enc): raw if it ended below minSize, or if the probe
// compressed (and flushed) is more than maxRatio of its raw size;
// compressed otherwise.
type source struct {
	size int // chunk size

	mem  bool // the payload is data: Put was given a []byte to store as is
	data []byte
	off  int

	r    io.Reader // the payload, counted and hashed, otherwise
	zw   encoder   // compressing into out; nil when stored raw
	out  chunker
	done bool

	comp     Compression // what the Options ask for
	enc      Compression // what is used, once decided
	decided  bool
	probe    int     // raw bytes read to decide
	minSize  int     // below it, stored raw; resolved, never negative
	maxRatio float64 // above it, stored raw; negative: never

	raw    *countingReader // nil for data
	hash   hash.Hash       // of the payload, as it is read
	stored int64
}

// encoder is what gzip.Writer and zstd.Encoder have in common.
type encoder interface {
	io.WriteCloser
	Flush() error
}

// newBytesSource reads a payload from memory, stored as o says.
func newBytesSource(data []byte, o Options) *source {
	if o.Compression == None || len(data) < minCompress(o) {
		return &source{size: o.ChunkSize, mem: true, data: data, hash: sha256.New(), decided: true}
	}
	return newReaderSource(&sliceReader{data}, o, int64(len(data)))
}

// newReaderSource reads a payload of at most limit bytes from r, stored as
// o says.
func newReaderSource(r io.Reader, o Options, limit int64) *source {
	s := &source{size: o.ChunkSize, hash: sha256.New(), comp: o.Compression, maxRatio: o.MaxCompressRatio}
	s.raw = &countingReader{r: r, max: limit}
	s.r = io.TeeReader(s.raw, s.hash)
	s.minSize = minCompress(o)
	s.probe = max(o.ChunkSize, s.minSize)
	s.decided = o.Compression == None
	return s
}

// minCompress is o.MinCompressSize resolved: negative means 0.
func minCompress(o Options) int {
	return max(o.MinCompressSize, 0)
}

// encoding returns how the payload is stored, once next has been called.
func (s *source) encoding() Compression { return s.enc }

// decide reads the probe and chooses how the payload is stored.
func (s *source) decide() error {
	s.decided = true
	probe := make([]byte, s.probe)
	n, err := io.ReadFull(s.r, probe)
	ended := err == io.EOF || err == io.ErrUnexpectedEOF
	if err != nil && !ended {
		return err
	}
	probe = probe[:n]
	raw := func() error {
		// Undo everything the trial compression set, done included: a
		// payload that ended inside the probe has all its bytes still to
		// be returned, raw.
		s.out = chunker{}
		s.zw = nil
		s.done = false
		s.r = io.MultiReader(bytes.NewReader(probe), s.r) // the probe is already hashed
		return nil
	}
	if n == 0 || (ended && n < s.minSize) {
		return raw()
	}
	s.out.size = s.size
	switch s.comp {
	case Gzip:
		s.zw = gzip.NewWriter(&s.out)
	case Zstd:
		zw, err := zstd.NewWriter(&s.out, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(zstdWindow))
		if err != nil {
			return err
		}
		s.zw = zw
	}
	// Writes go to s.out, which cannot fail.
	s.zw.Write(probe)
	if ended {
		s.zw.Close()
		s.out.flush()
		s.done = true
	} else {
		s.zw.Flush()
	}
	if s.maxRatio >= 0 && float64(s.out.len())/float64(n) > s.maxRatio {
		if !ended {
			s.zw.Close()
		}
		return raw()
	}
	s.enc = s.comp
	return nil
}

// zstdWindow is the window Put's zstd encoder uses and the largest one a
// reader accepts: 8 MiB, zstd's default.
const zstdWindow = 8 << 20

// errPayloadTooLarge is returned by countingReader past its limit.
var errPayloadTooLarge = errors.New("payload above MaxSize")

// next returns the next chunk, or io.EOF after the last one (an empty
// payload has no chunk at all). Other errors come from the caller's reader.
func (s *source) next() ([]byte, error) {
	c, err := s.next1()
	s.stored += int64(len(c))
	return c, err
}

func (s *source) next1() ([]byte, error) {
	if !s.decided {
		if err := s.decide(); err != nil {
			return nil, err
		}
	}
	switch {
	case s.mem:
		if s.off >= len(s.data) {
			return nil, io.EOF
		}
		end := min(s.off+s.size, len(s.data))
		c := s.data[s.off:end:end]
		s.off = end
		s.hash.Write(c) // while earlier chunks are on the wire
		return c, nil
	case s.zw == nil:
		if s.done {
			return nil, io.EOF
		}
		buf := make([]byte, s.size)
		n, err := io.ReadFull(s.r, buf)
		switch err {
		case nil:
			return buf, nil
		case io.EOF:
			s.done = true
			return nil, io.EOF
		case io.ErrUnexpectedEOF:
			s.done = true
			return buf[:n:n], nil
		}
		return nil, err
	}
	// Compressed: feed the compressor until it has produced a whole chunk
	// or the payload ends.
	if len(s.out.full) == 0 && !s.done {
		buf := make([]byte, 32<<10)
		for len(s.out.full) == 0 && !s.done {
			n, err := s.r.Read(buf)
			if n > 0 {
				s.zw.Write(buf[:n]) // writes into s.out, which cannot fail
			}
			switch {
			case err == io.EOF:
				s.zw.Close()
				s.out.flush()
				s.done = true
			case err != nil:
				return nil, err
			}
		}
	}
	if len(s.out.full) == 0 {
		return nil, io.EOF
	}
	c := s.out.full[0]
	s.out.full[0] = nil
	s.out.full = s.out.full[1:]
	return c, nil
}

// checksum returns the payload's length and SHA-256, once next has
// returned io.EOF.
func (s *source) checksum() (int64, [sha256.Size]byte) {
	var sum [sha256.Size]byte
	s.hash.Sum(sum[:0])
	if s.mem {
		return int64(len(s.data)), sum
	}
	return s.raw.n, sum
}

// chunker collects a compressor's output into chunks of size bytes.
type chunker struct {
	size int
	cur  []byte
	full [][]byte
	n    int64 // bytes written
}

func (c *chunker) Write(p []byte) (int, error) {
	n := len(p)
	c.n += int64(n)
	for len(p) > 0 {
		if c.cur == nil {
			c.cur = make([]byte, 0, c.size)
		}
		k := min(len(p), c.size-len(c.cur))
		c.cur = append(c.cur, p[:k]...)
		p = p[k:]
		if len(c.cur) == c.size {
			c.full = append(c.full, c.cur)
			c.cur = nil
		}
	}
	return n, nil
}

// len returns the bytes written so far.
func (c *chunker) len() int64 { return c.n }

func (c *chunker) flush() {
	if len(c.cur) > 0 {
		c.full = append(c.full, c.cur[:len(c.cur):len(c.cur)])
		c.cur = nil
	}
}

// countingReader counts what it reads and fails past max bytes.
type countingReader struct {
	r   io.Reader
	n   int64
	max int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.n > c.max {
		return 0, errPayloadTooLarge
	}
	// Read at most one byte past the limit: enough to know it is exceeded.
	if rest := c.max + 1 - c.n; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n > c.max {
		return n, errPayloadTooLarge
	}
	return n, err
}

// sliceReader is bytes.Reader without the seek state: enough for a
// compressor.
type sliceReader struct{ b []byte }

func (r *sliceReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}
