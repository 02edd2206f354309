package chunk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// forumText returns about n bytes of forum-reply-like prose, deterministic.
func forumText(n int) []byte {
	r := rand.New(rand.NewPCG(7, 7))
	words := strings.Fields(`the a to of and in is it that for you this with on
		have be are not but can if your was just use table item partition key
		DynamoDB query scan index throughput capacity read write request error
		thanks I think we tried when should would because using about reply
		question answer docs example code works problem same here also yes no
		version update batch retry throttled latency cost hot shard sort`)
	var b strings.Builder
	for b.Len() < n {
		fmt.Fprintf(&b, "Re: thread %d, reply %d\n", r.IntN(500), r.IntN(40))
		for s := 2 + r.IntN(5); s > 0; s-- {
			for w := 5 + r.IntN(12); w > 0; w-- {
				b.WriteString(words[r.IntN(len(words))])
				b.WriteByte(' ')
			}
			b.WriteString(". ")
		}
		b.WriteString("\n\n")
	}
	return []byte(b.String()[:n])
}

// forumJSON returns about n bytes of JSON forum replies, deterministic.
func forumJSON(n int) []byte {
	r := rand.New(rand.NewPCG(8, 8))
	type reply struct {
		ForumName string   `json:"ForumName"`
		Subject   string   `json:"Subject"`
		ReplyID   string   `json:"Id"`
		PostedBy  string   `json:"PostedBy"`
		Votes     int      `json:"Votes"`
		Tags      []string `json:"Tags"`
		Message   string   `json:"Message"`
	}
	text := forumText(1 << 20)
	var b bytes.Buffer
	b.WriteByte('[')
	for i := 0; b.Len() < n; i++ {
		off := r.IntN(len(text) - 400)
		m := reply{"Amazon DynamoDB", fmt.Sprintf("DynamoDB Thread %d", r.IntN(100)),
			fmt.Sprintf("DynamoDB#Thread%d#2012-03-%02dT%02d:%02d:%02d.%03dZ", r.IntN(100), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(1000)),
			fmt.Sprintf("User %c", 'A'+r.IntN(26)), r.IntN(100), []string{"index", "query", "cost"}[:1+r.IntN(3)],
			string(text[off : off+50+r.IntN(350)])}
		if i > 0 {
			b.WriteByte(',')
		}
		json.NewEncoder(&b).Encode(m)
	}
	b.WriteByte(']')
	return b.Bytes()[:n]
}

// BenchmarkCompression compares gzip and zstd, as Put runs them (one
// chunk-sized probe, then streaming, cut into DefaultChunkSize chunks),
// on forum prose and JSON: MB/s of payload compressed, and the stored/raw
// ratio. Decoding is measured the way a Reader decodes, from the stored
// chunks. None is the baseline: chunking alone.
func BenchmarkCompression(b *testing.B) {
	const n = 4 << 20
	inputs := []struct {
		name string
		data []byte
	}{{"text", forumText(n)}, {"json", forumJSON(n)}}
	for _, in := range inputs {
		for _, c := range []Compression{None, Gzip, Zstd} {
			o := Options{ChunkSize: DefaultChunkSize, Compression: c, MinCompressSize: -1, MaxCompressRatio: -1}
			var stored []byte
			b.Run(fmt.Sprintf("%s/%s/encode", in.name, name(c)), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(in.data)))
				for b.Loop() {
					src := newReaderSource(bytes.NewReader(in.data), o, 1<<30)
					stored = stored[:0]
					for {
						ch, err := src.next()
						if err == io.EOF {
							break
						}
						if err != nil {
							b.Fatal(err)
						}
						stored = append(stored, ch...)
					}
				}
				b.ReportMetric(float64(len(stored))/float64(len(in.data)), "ratio")
			})
			b.Run(fmt.Sprintf("%s/%s/decode", in.name, name(c)), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(in.data)))
				for b.Loop() {
					dec, err := newDecoder(c, bytes.NewReader(stored))
					if err != nil {
						b.Fatal(err)
					}
					if k, err := io.Copy(io.Discard, dec); err != nil || k != int64(len(in.data)) {
						b.Fatalf("decoded %d bytes, %v", k, err)
					}
				}
			})
		}
	}
}

func name(c Compression) string {
	if c == None {
		return "none"
	}
	return string(c)
}
