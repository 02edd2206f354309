package chunk

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard/internal/ddbtest"
)

// TestGuideChecksum: with Guide.Checksum, guide-layout writes also record
// ChunkBytes and ChunkSHA256, and reads verify them: a chunk rewritten
// with other text of the same length is a *CorruptError, where without a
// checksum it would not be noticed.
func TestGuideChecksum(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		ctx := context.Background()
		g := newGuideEnv(t, srv)
		st := newStore(t, g.c, g.reply, g.chunks, GuideLayout, func(o *Options) { o.ChunkSize = 64; o.Guide.Checksum = true })
		text := strings.Repeat("abcdefgh", 20)
		info, err := st.Put(ctx, g.thread1, []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		if info.NoChecksum || info.Size != int64(len(text)) {
			t.Errorf("Put Info %+v, want a checksum and the size", info)
		}
		stat, err := st.Stat(ctx, g.thread1)
		if err != nil || stat.NoChecksum || stat.Size != int64(len(text)) || stat.SHA256 != info.SHA256 {
			t.Errorf("Stat %+v, %v; want the checksum and size Put recorded", stat, err)
		}
		if got, ok, err := g.guideRead(ctx, g.thread1); err != nil || !ok || got != text {
			t.Errorf("guide reader: %q, %v, %v", got, ok, err)
		}
		g.put(t, g.chunks, map[string]types.AttributeValue{
			"Id": s(fmt.Sprintf("DynamoDB#Thread1#2012-03-15T20:42:54.023Z#%s#2", info.Version)), "Message": s(strings.Repeat("X", 64)),
		})
		var ce *CorruptError
		if _, _, err := st.Get(ctx, g.thread1); !errors.As(err, &ce) {
			t.Errorf("Get of a rewritten chunk: %v, want a *CorruptError", err)
		}
		// Delete of the guide's short message, which has no version.
		g.writeGuideItems(t, []string{"a", "b"})
		if err := st.Delete(ctx, g.short); err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.Get(ctx, g.short); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get after Delete of the short message: %v, want ErrNotFound", err)
		}
	})
}

// TestGuidePutRequests: a guide-layout Put costs one UpdateItem more than
// one in this package's layout, the counter's, and nothing else.
func TestGuidePutRequests(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		ctx := context.Background()
		g := newGuideEnv(t, srv)
		own := srv.Table(t, "Id:S")
		for _, text := range []string{"short", textPayload("long", 1000)} {
			counts := map[string]map[string]int{}
			for name, fn := range map[string]func(*Options){
				"guide": GuideLayout,
				"own":   func(o *Options) { o.ChunkKeyAttribute = "Id"; o.Guide = &Guide{} },
			} {
				p := newProbe()
				chunks := g.chunks
				if name == "own" {
					chunks = own
				}
				st := newStore(t, srv.Client(p.option), g.reply, chunks, fn, func(o *Options) { o.ChunkSize = 100 })
				if _, err := st.Put(ctx, replyKey("Thread-"+name, text[:4]), []byte(text)); err != nil {
					t.Fatal(err)
				}
				counts[name] = maps.Clone(p.calls)
			}
			want := maps.Clone(counts["own"])
			want["UpdateItem"]++
			if d := cmp.Diff(want, counts["guide"]); d != "" {
				t.Errorf("Put of %d bytes, requests (-own+1 UpdateItem +guide):\n%s", len(text), d)
			}
		}
	})
}

// TestGuideShortMessageVersion: a short message written by Put records a
// ChunkVersion (the guide shows none), and that is what makes a second
// writer that started from the same short message lose with ErrConflict:
// without a version, both flips' conditions ("no ChunkVersion") would
// hold. Readers take the short message either way, the guide's own one
// (no ChunkVersion) included.
func TestGuideShortMessageVersion(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		ctx := context.Background()
		g := newGuideEnv(t, srv)
		g.writeGuideItems(t, []string{"aaaa", "bbbb"})
		a := newStore(t, g.c, g.reply, g.chunks, GuideLayout)
		b := newStore(t, g.c, g.reply, g.chunks, GuideLayout)
		if got, info, err := b.Get(ctx, g.short); err != nil || string(got) != "short message" || info.Version != "" {
			t.Fatalf("the guide's short message: %q (version %q), %v", got, info.Version, err)
		}
		var bErr error
		a.beforeFlip = func(ctx context.Context) error {
			// b writes a short message between a's read and a's flip.
			_, bErr = b.Put(ctx, g.short, []byte("b's short message"))
			return nil
		}
		_, aErr := a.Put(ctx, g.short, []byte("a's short message"))
		if bErr != nil {
			t.Fatalf("b: %v", bErr)
		}
		if !errors.Is(aErr, ErrConflict) {
			t.Errorf("a, which started from the short message b replaced: %v, want ErrConflict", aErr)
		}
		got, info, err := b.Get(ctx, g.short, func(o *Options) { o.ConsistentRead = true })
		if err != nil || string(got) != "b's short message" || info.Version == "" {
			t.Errorf("after both: %q (version %q), %v; want b's short message with a version", got, info.Version, err)
		}
		text, ok, err := g.guideRead(ctx, g.short)
		if err != nil || !ok || text != "b's short message" {
			t.Errorf("a reader of the guide: %q, %v, %v", text, ok, err)
		}
	})
}
