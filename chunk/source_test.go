package chunk

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
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
			mk := map[string]func() *source{}
			for _, c := range []Compression{None, Gzip, Zstd} {
				// Always compressed, whatever the size and ratio.
				o := Options{ChunkSize: size, Compression: c, MinCompressSize: -1, MaxCompressRatio: -1}
				mk["bytes "+string(c)] = func() *source { return newBytesSource(data, o) }
				mk["reader "+string(c)] = func() *source {
					return newReaderSource(iotest.OneByteReader(bytes.NewReader(data)), o, 1<<20)
				}
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
				want := Compression(name[strings.IndexByte(name, ' ')+1:])
				if n == 0 {
					want = None // nothing to compress
				}
				if src.encoding() != want {
					t.Errorf("%s n=%d: encoding %q, want %q", name, n, src.encoding(), want)
				}
				dec, err := newDecoder(src.encoding(), bytes.NewReader(stored))
				if err != nil {
					t.Fatalf("%s n=%d: %v", name, n, err)
				}
				got, err := io.ReadAll(dec)
				if err != nil {
					t.Fatalf("%s n=%d: %v", name, n, err)
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
	for _, c := range []Compression{None, Gzip, Zstd} {
		for _, n := range []int{99, 100, 101, 1000} {
			src := newReaderSource(bytes.NewReader(payload(n, 2, false)), Options{ChunkSize: 30, Compression: c, MaxCompressRatio: -1}, 100)
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
	src := newReaderSource(iotest.ErrReader(boom), Options{ChunkSize: 30}, 100)
	if _, err := src.next(); !errors.Is(err, boom) {
		t.Errorf("got %v, want the reader's error", err)
	}
}

// TestSourceDecide checks when a source stores a payload raw although a
// Compression is set: below MinCompressSize, and above MaxCompressRatio,
// judged exactly for a payload within the probe and by the probe for a
// longer one.
func TestSourceDecide(t *testing.T) {
	const size = 1000
	tests := []struct {
		name string
		n    int
		text bool
		min  int
		want bool // compressed
	}{
		{"text below min", 499, true, 500, false},
		{"text at min", 500, true, 500, true},
		{"text within probe", size, true, 500, true},
		{"text past probe", 10 * size, true, 500, true},
		{"random within probe", size, false, 500, false},
		{"random past probe", 10 * size, false, 500, false},
		{"min above chunk size", 1500, true, 2000, false},
		{"min above chunk size reached", 2000, true, 2000, true},
	}
	for _, tt := range tests {
		for _, c := range []Compression{Gzip, Zstd} {
			for _, mode := range []string{"bytes", "reader"} {
				t.Run(fmt.Sprintf("%s/%s/%s", tt.name, c, mode), func(t *testing.T) {
					data := payload(tt.n, 3, tt.text)
					o := Options{ChunkSize: size, Compression: c, MinCompressSize: tt.min, MaxCompressRatio: DefaultMaxCompressRatio}
					src := newBytesSource(data, o)
					if mode == "reader" {
						src = newReaderSource(iotest.HalfReader(bytes.NewReader(data)), o, 1<<20)
					}
					var stored []byte
					for {
						c, err := src.next()
						if err == io.EOF {
							break
						}
						if err != nil {
							t.Fatal(err)
						}
						stored = append(stored, c...)
					}
					want := None
					if tt.want {
						want = c
					}
					if src.encoding() != want {
						t.Errorf("encoding %q, want %q", src.encoding(), want)
					}
					if want == None && !bytes.Equal(stored, data) {
						t.Errorf("stored raw, but %d bytes differ from the %d of the payload", len(stored), len(data))
					}
					if want != None && float64(len(stored)) > DefaultMaxCompressRatio*float64(len(data)) {
						t.Errorf("compressed %d bytes to %d", len(data), len(stored))
					}
					if n, sum := src.checksum(); n != int64(len(data)) || sum != sha256.Sum256(data) {
						t.Errorf("checksum of %d bytes, want the payload's", n)
					}
				})
			}
		}
	}
}
