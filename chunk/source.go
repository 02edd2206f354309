package chunk

import (
	"compress/gzip"
	"crypto/sha256"
	"errors"
	"hash"
	"io"
)

// source cuts a payload into stored chunks. Chunks before the last are
// exactly size bytes, so a shorter chunk is always the last one. Each chunk
// is a slice nobody else writes to: of the caller's []byte when stored as
// is, freshly allocated otherwise (the batch engine may still hold earlier
// ones).
type source struct {
	size int // chunk size

	mem  bool // the payload is data: Put was given a []byte to store as is
	data []byte
	off  int

	r    io.Reader    // the payload, counted and hashed, otherwise
	gz   *gzip.Writer // compressing into out
	out  chunker
	done bool

	raw    *countingReader // nil for data
	hash   hash.Hash       // of the payload, as it is read
	stored int64
}

// newBytesSource reads a payload from memory.
func newBytesSource(data []byte, size int, c Compression) *source {
	if c == None {
		return &source{size: size, mem: true, data: data, hash: sha256.New()}
	}
	return newReaderSource(&sliceReader{data}, size, c, int64(len(data)))
}

// newReaderSource reads a payload of at most max bytes from r.
func newReaderSource(r io.Reader, size int, c Compression, max int64) *source {
	s := &source{size: size, hash: sha256.New()}
	s.raw = &countingReader{r: r, max: max}
	s.r = io.TeeReader(s.raw, s.hash)
	if c == Gzip {
		s.out.size = size
		s.gz = gzip.NewWriter(&s.out)
	}
	return s
}

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
	case s.gz == nil:
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
				s.gz.Write(buf[:n]) // writes into s.out, which cannot fail
			}
			switch {
			case err == io.EOF:
				s.gz.Close()
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
}

func (c *chunker) Write(p []byte) (int, error) {
	n := len(p)
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

// sliceReader is bytes.Reader without the seek state: enough for gzip.
type sliceReader struct{ b []byte }

func (r *sliceReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}
