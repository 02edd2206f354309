package chunk

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"
)

// dummyClient satisfies Client for tests that make no request.
type dummyClient struct{ Client }

// payload returns n deterministic bytes: random, or text that compresses.
func payload(n int, seed uint64, text bool) []byte {
	r := rand.New(rand.NewPCG(seed, uint64(n)))
	b := make([]byte, n)
	if !text {
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	words := []string{"chunk ", "version ", "parent ", "DynamoDB ", "item ", "#", "\n", "partition ", "key "}
	for i := 0; i < n; {
		i += copy(b[i:], words[r.IntN(len(words))])
	}
	return b
}

// TestSource cuts payloads with every kind of source and checks the chunks
// against the payload itself: sizes, order, checksum.
func TestSource(t *testing.T) {
	const size = 100
	for _, n := range []int{0, 1, size - 1, size, size + 1, 10*size + 7} {
		for _, text := range []bool{false, true} {
			data := payload(n, 1, text)
			mk := map[string]func() *source{
				"bytes":      func() *source { return newBytesSource(data, size, None) },
				"bytes gzip": func() *source { return newBytesSource(data, size, Gzip) },
				"reader":     func() *source { return newReaderSource(iotest.HalfReader(bytes.NewReader(data)), size, None, 1<<20) },
				"reader gzip": func() *source {
					return newReaderSource(iotest.OneByteReader(bytes.NewReader(data)), size, Gzip, 1<<20)
				},
			}
			for name, f := range mk {
				src := f()
				var stored []byte
				var chunks [][]byte
				for {
					c, err := src.next()
					if err == io.EOF {
						break
					}
					if err != nil {
						t.Fatalf("%s n=%d: %v", name, n, err)
					}
					chunks = append(chunks, c)
					stored = append(stored, c...)
				}
				for i, c := range chunks {
					if len(c) == 0 || len(c) > size || (i < len(chunks)-1 && len(c) != size) {
						t.Errorf("%s n=%d: chunk %d of %d has %d bytes", name, n, i+1, len(chunks), len(c))
					}
				}
				if src.stored != int64(len(stored)) {
					t.Errorf("%s n=%d: stored %d, want %d", name, n, src.stored, len(stored))
				}
				got := stored
				if name == "bytes gzip" || name == "reader gzip" {
					zr, err := gzip.NewReader(bytes.NewReader(stored))
					if err != nil {
						t.Fatalf("%s n=%d: %v", name, n, err)
					}
					if got, err = io.ReadAll(zr); err != nil {
						t.Fatalf("%s n=%d: %v", name, n, err)
					}
				}
				if !bytes.Equal(got, data) {
					t.Errorf("%s n=%d: payload differs", name, n)
				}
				gn, sum := src.checksum()
				if gn != int64(n) || sum != sha256.Sum256(data) {
					t.Errorf("%s n=%d: checksum of %d bytes, want %d and the payload's SHA-256", name, n, gn, n)
				}
			}
		}
	}
}

func TestSourceLimit(t *testing.T) {
	for _, c := range []Compression{None, Gzip} {
		for _, n := range []int{99, 100, 101, 1000} {
			src := newReaderSource(bytes.NewReader(payload(n, 2, false)), 30, c, 100)
			var err error
			for err == nil {
				_, err = src.next()
			}
			if tooBig := n > 100; errors.Is(err, errPayloadTooLarge) != tooBig || (!tooBig && err != io.EOF) {
				t.Errorf("compression %q, %d bytes, limit 100: got %v", c, n, err)
			}
		}
	}
	boom := errors.New("boom")
	src := newReaderSource(iotest.ErrReader(boom), 30, None, 100)
	if _, err := src.next(); !errors.Is(err, boom) {
		t.Errorf("got %v, want the reader's error", err)
	}
}
