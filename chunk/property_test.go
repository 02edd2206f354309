package chunk

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/localddb"
)

// The property test: random cases over the whole option space (Compression
// × Objects × the guide's layout × Guide.Checksum × Put/PutReader ×
// ConsistentRead, with chunk sizes, inline limits, compression thresholds
// and object thresholds), payloads whose sizes sit on every boundary those
// options make and whose content ranges from random bytes to zeros. Each
// case stores a payload, fails a second Put on purpose, stores a third and
// checks that:
//   - Get (or a Reader) returns exactly the bytes of the last acknowledged
//     Put (with ConsistentRead; without, the last or an earlier one);
//   - a Put that fails leaves the previous payload readable, byte-identical;
//   - the requests of a Put and of a Get are those the package
//     documentation states (see propRequests).
//
// go test -run TestProperty runs propDefaultCases per server, ten times as
// many with -chunk.long; any number with -chunk.cases=N, one case again
// with -chunk.seed=S -chunk.cases=1.
var (
	propCases = flag.Int("chunk.cases", 0, "cases of TestProperty per server (default 40, 400 with -chunk.long, 10 with -short)")
	propSeed  = flag.Uint64("chunk.seed", 0, "seed of TestProperty's first case (default: from the clock)")
)

const propDefaultCases = 40

// propCase is one point of the option space and the payloads stored.
type propCase struct {
	seed        uint64
	comp        Compression
	objects     bool
	threshold   int64 // Options.ObjectThreshold
	guide       int   // 0: none; 1: Guide read-only; 2: Guide.Write
	checksum    bool  // Guide.Checksum
	chunkSize   int
	inlineLimit int
	minCompress int
	retainOld   bool
	putMode     int // 0: Put; 1: PutReader with a Len method; 2: PutReader without one
	consistent  bool
	stream      bool // read with Open instead of Get
	failure     int  // how the second Put fails: 0 reader error, 1 before the flip, 2 condition
	sizes       [3]int
	kinds       [3]int
	failAt      int // where the reader fails (failure 0)
}

const (
	failReader = iota
	failFlip
	failCondition
)

var putModes = [...]string{"Put", "PutReader", "PutReader without Len"}
var guideModes = [...]string{"own layout", "Guide read", "Guide write"}
var failures = [...]string{"reader error", "flip refused", "condition failed"}

// payload contents.
const (
	kindRandom = iota
	kindZeros
	kindText
	kindRunes // multi-byte UTF-8 text
	kindHeadTail
	kindTailHead
	numKinds
)

var kindNames = [...]string{"random", "zeros", "text", "runes", "text head + random tail", "random head + zero tail"}

func (c propCase) String() string {
	return fmt.Sprintf("seed %d: Compression %q, objects %v (threshold %d), %s (checksum %v), ChunkSize %d, InlineLimit %d, MinCompressSize %d, RetainOld %v, %s, ConsistentRead %v, stream %v, failure %q at %d; sizes %v, kinds %s/%s/%s",
		c.seed, c.comp, c.objects, c.threshold, guideModes[c.guide], c.checksum, c.chunkSize, c.inlineLimit, c.minCompress, c.retainOld,
		putModes[c.putMode], c.consistent, c.stream, failures[c.failure], c.failAt, c.sizes, kindNames[c.kinds[0]], kindNames[c.kinds[1]], kindNames[c.kinds[2]])
}

// text reports whether the case's payloads must be valid UTF-8.
func (c propCase) text() bool { return c.guide == 2 }

// options returns the case's Options for a Store offloading to objs.
func (c propCase) options(objs ObjectStore) func(*Options) {
	return func(o *Options) {
		o.ChunkSize, o.InlineLimit, o.MinCompressSize, o.RetainOld = c.chunkSize, c.inlineLimit, c.minCompress, c.retainOld
		o.Compression = c.comp
		if c.objects {
			o.Objects, o.ObjectThreshold = objs, c.threshold
		}
		switch c.guide {
		case 1:
			o.Guide = &Guide{}
		case 2:
			o.Guide = &Guide{Write: true, Checksum: c.checksum}
		}
	}
}

// limits are the boundaries of the case's options, resolved as New does.
func (c propCase) limits() (minCompress, probe, inline int) {
	minCompress = c.minCompress
	if minCompress == 0 {
		minCompress = DefaultMinCompressSize
	}
	minCompress = max(minCompress, 0)
	probe = max(c.chunkSize, minCompress)
	inline = c.inlineLimit
	if inline == 0 {
		inline = DefaultInlineLimit
	}
	if c.text() {
		inline = min(inline, c.chunkSize-utf8.UTFMax)
	}
	return minCompress, probe, min(inline, c.chunkSize-1)
}

// newPropCase draws a case from seed.
func newPropCase(seed uint64) propCase {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	c := propCase{seed: seed}
	c.guide = r.IntN(3)
	c.checksum = r.IntN(2) == 0
	if c.guide != 2 {
		c.comp = []Compression{None, Gzip, Zstd}[r.IntN(3)]
		c.objects = r.IntN(2) == 0
	}
	switch r.IntN(6) {
	case 0:
		c.chunkSize = DefaultChunkSize
	case 1:
		c.chunkSize = 16 + r.IntN(48)
	default:
		c.chunkSize = 64 + r.IntN(3000)
	}
	switch r.IntN(4) {
	case 0:
		c.inlineLimit = -1
	case 1:
		// Below ChunkSize, and UTFMax below it for the guide's text
		// writes (New refuses more: maxInlineLimit).
		most := c.chunkSize - 1
		if c.guide == 2 {
			most = c.chunkSize - utf8.UTFMax
		}
		c.inlineLimit = r.IntN(most + 1)
	} // else the default
	switch r.IntN(4) {
	case 0:
		c.minCompress = -1
	case 1:
		c.minCompress = 1 + r.IntN(min(2*c.chunkSize, maxChunkData))
	} // else the default
	c.retainOld = r.IntN(4) == 0
	c.putMode = r.IntN(3)
	c.consistent = r.IntN(2) == 0
	c.stream = r.IntN(4) == 0
	c.failure = r.IntN(3)
	if c.failure == failReader && c.putMode == 0 {
		c.failure = failFlip // Put takes bytes: nothing to fail while reading
	}
	// Sizes: on a boundary of the options most of the time.
	minCompress, probe, inline := c.limits()
	if c.objects {
		switch r.IntN(3) {
		case 0:
			c.threshold = -1
		default:
			c.threshold = int64(1 + r.IntN(3*c.chunkSize+2))
		}
	}
	bounds := []int{0, 1, minCompress, probe, inline, inline + 1}
	for k := 1; k <= 3; k++ {
		bounds = append(bounds, k*c.chunkSize)
	}
	if c.threshold > 0 {
		bounds = append(bounds, int(c.threshold))
	}
	for i := range c.sizes {
		var n int
		if r.IntN(5) == 0 {
			n = r.IntN(3*c.chunkSize + 2)
		} else {
			n = bounds[r.IntN(len(bounds))] + r.IntN(7) - 3 // ±1, and the rune cut's ±3
		}
		c.sizes[i] = max(n, 0)
		c.kinds[i] = r.IntN(numKinds)
		if c.text() {
			c.kinds[i] = []int{kindZeros, kindText, kindRunes}[r.IntN(3)]
		}
	}
	c.failAt = r.IntN(c.sizes[1] + 1)
	return c
}

// propPayload returns n bytes of the kind, drawn from r.
func propPayload(r *rand.Rand, kind, n int) []byte {
	b := make([]byte, 0, n)
	switch kind {
	case kindRandom:
		for range n {
			b = append(b, byte(r.Uint32()))
		}
	case kindZeros:
		b = b[:n]
	case kindText:
		words := []string{"chunk ", "version ", "parent ", "DynamoDB ", "item ", "#", "\n", "partition ", "key "}
		for len(b) < n {
			b = append(b, words[r.IntN(len(words))]...)
		}
		b = b[:n]
	case kindRunes:
		runes := []rune{'a', 'é', '€', '😀', 'ß', '中'}
		for len(b) < n {
			c := runes[r.IntN(len(runes))]
			if len(b)+utf8.RuneLen(c) > n {
				c = 'z'
			}
			b = utf8.AppendRune(b, c)
		}
	case kindHeadTail, kindTailHead:
		head := r.IntN(n + 1)
		first, second := kindText, kindRandom
		if kind == kindTailHead {
			first, second = kindRandom, kindZeros
		}
		b = append(propPayload(r, first, head), propPayload(r, second, n-head)...)
	}
	return b
}

// propEnv is what the cases of one server share.
type propEnv struct {
	e    *env
	objs *s3Objects
}

func newPropEnv(t testing.TB, srv *ddbtest.Server) *propEnv {
	return &propEnv{e: newEnv(t, srv), objs: newS3Objects(t)}
}

// failingReader returns r's bytes up to n, then an error.
type failingReader struct {
	r io.Reader
	n int
}

var errPropReader = errors.New("property test: reader failed")

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errPropReader
	}
	if len(p) > f.n {
		p = p[:f.n]
	}
	n, err := f.r.Read(p)
	f.n -= n
	if err == io.EOF {
		return n, errPropReader
	}
	return n, err
}

var errPropFlip = errors.New("property test: flip refused")

// run runs case c: Put sizes[0], a failing Put of sizes[1], Put sizes[2],
// checking every read and the requests of the last Put and Get. It returns
// an error describing the first violation.
func (pe *propEnv) run(ctx context.Context, c propCase, data [3][]byte) error {
	cl, p := pe.e.countingClient()
	st, err := New(cl, pe.e.parents, pe.e.chunks, c.options(pe.objs))
	if err != nil {
		return fmt.Errorf("New: %w", err)
	}
	key := sKey(fmt.Sprintf("prop-%d", c.seed))
	put := func(b []byte, optFns ...func(*PutOptions)) (Info, error) {
		switch c.putMode {
		case 1:
			return st.PutReader(ctx, key, bytes.NewReader(b), optFns...)
		case 2:
			return st.PutReader(ctx, key, noLen{iotest.HalfReader(bytes.NewReader(b))}, optFns...)
		}
		return st.Put(ctx, key, b, optFns...)
	}
	var acked [][]byte // payloads acknowledged, oldest first
	read := func(consistent bool) ([]byte, Info, error) {
		opt := func(o *Options) { o.ConsistentRead = consistent }
		if !c.stream {
			return st.Get(ctx, key, opt)
		}
		rd, err := st.Open(ctx, key, opt)
		if err != nil {
			return nil, Info{}, err
		}
		defer rd.Close()
		b, err := io.ReadAll(iotest.HalfReader(rd))
		return b, rd.Info(), err
	}
	check := func(step string, consistent bool) (Info, error) {
		got, info, err := read(consistent)
		if err != nil {
			return info, fmt.Errorf("%s: read: %w", step, err)
		}
		last := acked[len(acked)-1]
		if bytes.Equal(got, last) {
			return info, nil
		}
		if !consistent {
			for _, a := range acked[:len(acked)-1] {
				if bytes.Equal(got, a) {
					return info, nil // an eventually consistent read may lag
				}
			}
		}
		return info, fmt.Errorf("%s: read %d bytes (sha %x…), want the %d of the last acknowledged Put", step, len(got), sha(got), len(last))
	}

	// 1. The first payload.
	info1, err := put(data[0])
	if err != nil {
		return fmt.Errorf("first Put: %w", err)
	}
	acked = append(acked, data[0])
	if err := checkPutInfo(c, info1, data[0]); err != nil {
		return fmt.Errorf("first Put: %w", err)
	}
	if _, err := check("after the first Put", c.consistent); err != nil {
		return err
	}

	// 2. A Put that fails must leave the first payload as it was.
	var failErr error
	switch c.failure {
	case failReader:
		r := io.Reader(&failingReader{r: bytes.NewReader(data[1]), n: c.failAt})
		if c.putMode == 2 {
			r = iotest.HalfReader(r)
		}
		_, failErr = st.PutReader(ctx, key, r)
		if !errors.Is(failErr, errPropReader) {
			return fmt.Errorf("Put with a failing reader: %v, want the reader's error", failErr)
		}
	case failFlip:
		st.beforeFlip = func(context.Context) error { return errPropFlip }
		_, failErr = put(data[1])
		st.beforeFlip = nil
		if failErr == nil {
			return errors.New("Put whose flip fails returned nil")
		}
	case failCondition:
		_, failErr = put(data[1], func(o *PutOptions) { o.Condition = expression.AttributeNotExists(expression.Name("pk")) })
		if !errors.Is(failErr, ErrConflict) {
			return fmt.Errorf("Put whose condition fails: %v, want ErrConflict", failErr)
		}
	}
	if _, err := check("after a failed Put ("+failErr.Error()+")", true); err != nil {
		return err
	}

	// 3. The last payload, with its requests counted.
	prev, err := st.Stat(ctx, key, func(o *Options) { o.ConsistentRead = true })
	if err != nil {
		return fmt.Errorf("Stat: %w", err)
	}
	p.reset()
	pe.objs.reset()
	info3, err := put(data[2])
	if err != nil {
		return fmt.Errorf("last Put: %w", err)
	}
	acked = append(acked, data[2])
	if err := checkPutInfo(c, info3, data[2]); err != nil {
		return fmt.Errorf("last Put: %w", err)
	}
	if got, want := measured(p, pe.objs), c.putRequests(&prev, info3); got != want {
		return fmt.Errorf("last Put (%d chunks, object %v, replacing %d chunks, object %v): requests %+v, want %+v",
			info3.Chunks, info3.Object != "", prev.Chunks, prev.Object != "", got, want)
	}
	p.reset()
	pe.objs.reset()
	ginfo, err := check("after the last Put", c.consistent)
	if err != nil {
		return err
	}
	if c.consistent {
		got, want := measured(p, pe.objs), c.getRequests(ginfo)
		if pe.e.srv.Kind == localddb.Dynalite && ginfo.StoredSize > 1<<20 {
			// dynalite answers a BatchGetItem with pages of about 1 MB.
			want.batchGet = got.batchGet
		}
		if got.get != want.get || got.batchGet > want.batchGet || got.s3Get != want.s3Get || got.update+got.batchWrite+got.s3Put+got.s3Delete != 0 {
			return fmt.Errorf("read of %d chunks, object %v, %d stored bytes: requests %+v, want at most %+v",
				ginfo.Chunks, ginfo.Object != "", ginfo.StoredSize, got, want)
		}
	}
	return nil
}

func sha(b []byte) []byte { s := sha256.Sum256(b); return s[:4] }

// checkPutInfo checks what Put reports against the payload and the options.
func checkPutInfo(c propCase, info Info, data []byte) error {
	n := int64(len(data))
	switch {
	case info.Size != n:
		return fmt.Errorf("Info.Size %d, want %d", info.Size, n)
	case info.Compression == None && info.StoredSize != n:
		return fmt.Errorf("stored %d bytes of a raw payload of %d", info.StoredSize, n)
	case info.Compression != None && info.StoredSize == 0:
		return fmt.Errorf("stored 0 bytes of a %s payload of %d", info.Compression, n)
	case info.Compression != None && c.comp == None:
		return fmt.Errorf("compressed with %q, Options.Compression None", info.Compression)
	case info.Object == "" && c.guide != 2 && info.Chunks != ceilDiv(int(info.StoredSize), c.chunkSize) && info.Chunks != 0:
		return fmt.Errorf("%d chunks for %d stored bytes of ChunkSize %d", info.Chunks, info.StoredSize, c.chunkSize)
	}
	return nil
}

// propPayloads draws the case's three payloads.
func propPayloads(c propCase) [3][]byte {
	r := rand.New(rand.NewPCG(c.seed, 1))
	var data [3][]byte
	for i := range data {
		data[i] = propPayload(r, c.kinds[i], c.sizes[i])
	}
	return data
}

// TestProperty runs random cases over the option space on every server
// (and s3rver for objects). A failure names the case's seed: rerun it
// with -chunk.seed=S -chunk.cases=1.
func TestProperty(t *testing.T) {
	cases := *propCases
	switch {
	case cases > 0:
	case *long:
		cases = 10 * propDefaultCases
	case testing.Short():
		cases = 10
	default:
		cases = propDefaultCases
	}
	base := *propSeed
	if base == 0 {
		base = uint64(time.Now().UnixNano())
	}
	t.Logf("seeds %d…%d (rerun one with -chunk.seed=S -chunk.cases=1)", base, base+uint64(cases)-1)
	eachParallel(t, func(t *testing.T, srv *ddbtest.Server) {
		pe := newPropEnv(t, srv)
		ctx := context.Background()
		start := time.Now()
		for i := range cases {
			c := newPropCase(base + uint64(i))
			if err := pe.run(ctx, c, propPayloads(c)); err != nil {
				t.Fatalf("case %d of %d (after %v): %v\n%v", i+1, cases, time.Since(start).Round(time.Millisecond), err, c)
			}
		}
		t.Logf("%d cases in %v", cases, time.Since(start).Round(time.Millisecond))
	})
}

// FuzzRoundTrip drives the property test's check with the fuzzer's
// choice of case (seed) and last payload (data), on the first selected
// server: go test ./chunk/ -run '^$' -fuzz FuzzRoundTrip.
func FuzzRoundTrip(f *testing.F) {
	f.Add(uint64(1), []byte{})
	f.Add(uint64(2), bytes.Repeat([]byte("chunk "), 300))
	f.Add(uint64(3), []byte("é😀"))
	srv, err := ddbtest.Default()
	if err != nil {
		f.Fatal(err)
	}
	pe := newPropEnv(f, srv)
	f.Fuzz(func(t *testing.T, seed uint64, data []byte) {
		c := newPropCase(seed)
		payloads := propPayloads(c)
		if c.text() {
			data = []byte(strings.ToValidUTF8(string(data), "?"))
		}
		payloads[2] = data
		c.sizes[2] = len(data)
		if err := pe.run(context.Background(), c, payloads); err != nil {
			t.Fatalf("%v\n%v", err, c)
		}
	})
}
