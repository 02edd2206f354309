package chunk

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/internal/ddbtest"
)

// TestGuideWrite: what a Store in the guide's layout writes is what the
// guide shows (ChunkVersion and ChunkCount numbers, text in Message),
// readable by a reader that knows only the guide, through every size
// boundary of a small ChunkSize, with multi-byte text cut on rune
// boundaries; versions count up from the guide's own version 1.
func TestGuideWrite(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		ctx := context.Background()
		g := newGuideEnv(t, srv)
		const size = 64
		st := newStore(t, g.c, g.reply, g.chunks, GuideLayout, func(o *Options) { o.ChunkSize = size })
		g.writeGuideItems(t, []string{"old ", "text"})
		last := 1 // the guide's version
		for i, l := range []int{0, 1, size - 5, size - 4, size - 3, size, size + 1, 3*size + 2, 40 * size} {
			text := textPayload("v"+strconv.Itoa(i), l)
			info, err := st.Put(ctx, g.thread1, []byte(text))
			if err != nil {
				t.Fatalf("Put of %d bytes: %v", len(text), err)
			}
			v, err := strconv.Atoi(info.Version)
			if err != nil || v <= last {
				t.Fatalf("Put %d: version %q, want a number above %d", i, info.Version, last)
			}
			last = v
			got, ok, err := g.guideRead(ctx, g.thread1)
			if err != nil || !ok || got != text {
				t.Fatalf("guide reader after Put of %d bytes: %q, %v, %v; want %q", len(text), got, ok, err, text)
			}
			data, _, err := st.Get(ctx, g.thread1)
			if err != nil || string(data) != text {
				t.Fatalf("Get after Put of %d bytes: %q, %v", len(text), data, err)
			}
			out, err := g.c.GetItem(ctx, &dynamodb.GetItemInput{TableName: &g.reply, Key: g.thread1.item(), ConsistentRead: aws.Bool(true)})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for name := range out.Item {
				names = append(names, name)
			}
			slices.Sort(names)
			want := []string{"ChunkCount", "ChunkPrevious", "ChunkVersion", "Id", "PostedBy", "ReplyDateTime"}
			if info.Chunks == 0 {
				want = []string{"ChunkPrevious", "ChunkVersion", "Id", "Message", "PostedBy", "ReplyDateTime"}
			}
			if d := cmp.Diff(want, names); d != "" {
				t.Errorf("parent attributes after Put of %d bytes (-want +got):\n%s", len(text), d)
			}
			if _, ok := out.Item["ChunkVersion"].(*types.AttributeValueMemberN); !ok {
				t.Errorf("ChunkVersion is %T, want N", out.Item["ChunkVersion"])
			}
			// Only the current version's chunks and the counter remain.
			keys := scanKeys(t, g.c, g.chunks, "Id")
			wantKeys := []string{"DynamoDB#Thread1#2012-03-15T20:42:54.023Z#ChunkVersion"}
			for seq := 1; seq <= info.Chunks; seq++ {
				wantKeys = append(wantKeys, fmt.Sprintf("DynamoDB#Thread1#2012-03-15T20:42:54.023Z#%d#%d", v, seq))
			}
			slices.Sort(wantKeys)
			if d := cmp.Diff(wantKeys, keys); d != "" {
				t.Errorf("chunk table after Put of %d bytes (-want +got):\n%s", len(text), d)
			}
			for _, k := range keys {
				if strings.HasSuffix(k, "#ChunkVersion") {
					continue
				}
				it, err := g.c.GetItem(ctx, &dynamodb.GetItemInput{TableName: &g.chunks, Key: map[string]types.AttributeValue{"Id": s(k)}})
				if err != nil {
					t.Fatal(err)
				}
				m := it.Item["Message"].(*types.AttributeValueMemberS).Value
				if len(m) > size || !utf8.ValidString(m) {
					t.Errorf("chunk %s: %d bytes, valid UTF-8 %v", k, len(m), utf8.ValidString(m))
				}
			}
		}

		// Sweep, however late, leaves the guide's layout alone.
		before := scanKeys(t, g.c, g.chunks, "Id")
		late := newStore(t, g.c, g.reply, g.chunks, GuideLayout, func(o *Options) { o.ChunkSize = size })
		late.now = later(late)
		stats, err := late.Sweep(ctx)
		if err != nil || stats.Deleted != 0 || stats.Foreign != len(before) {
			t.Errorf("late Sweep: %+v, %v; want nothing deleted, all %d items foreign", stats, err, len(before))
		}
		if d := cmp.Diff(before, scanKeys(t, g.c, g.chunks, "Id")); d != "" {
			t.Errorf("chunk table after Sweep (-before +after):\n%s", d)
		}

		// Delete keeps the counter: a later Put takes a number never used.
		if err := st.Delete(ctx, g.thread1); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := g.guideRead(ctx, g.thread1); ok {
			t.Errorf("guide reader finds a payload after Delete")
		}
		info, err := st.Put(ctx, g.thread1, []byte("again"))
		if err != nil {
			t.Fatal(err)
		}
		if v, _ := strconv.Atoi(info.Version); v <= last {
			t.Errorf("Put after Delete: version %s, want above %d", info.Version, last)
		}

		// With no inline payloads, a non-empty text is chunked and the
		// empty one is still the guide's short message (no ChunkCount 0).
		chunked := newStore(t, g.c, g.reply, g.chunks, GuideLayout, func(o *Options) { o.ChunkSize = size; o.InlineLimit = -1 })
		for _, text := range []string{"", "é"} {
			info, err := chunked.Put(ctx, g.short, []byte(text))
			if err != nil {
				t.Fatal(err)
			}
			if wantChunks := min(len(text), 1); info.Chunks != wantChunks {
				t.Errorf("Put of %q with InlineLimit -1: %d chunks", text, info.Chunks)
			}
			got, ok, err := g.guideRead(ctx, g.short)
			if err != nil || !ok || got != text {
				t.Errorf("guide reader after Put of %q with InlineLimit -1: %q, %v, %v", text, got, ok, err)
			}
		}
	})
}

// TestGuideConcurrentWriters: eight writers in the guide's layout on one
// key, readers following them (a Store, and a reader that knows only the
// guide): every write either wins or gets ErrConflict, and every read is
// exactly one writer's whole text, never a mix. Version numbers are
// reserved before any chunk is written, so no two attempts share chunk
// keys (writers that both took "the next version" would overwrite each
// other's chunks, and a reader following the winner could read the
// loser's).
func TestGuideConcurrentWriters(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		ctx := context.Background()
		g := newGuideEnv(t, srv)
		st := newStore(t, g.c, g.reply, g.chunks, GuideLayout, func(o *Options) { o.ChunkSize = 64 })
		if _, err := st.Put(ctx, g.thread1, []byte(guideValue("start"))); err != nil {
			t.Fatal(err)
		}
		const writers, rounds = 8, 4
		done := make(chan struct{})
		type result struct {
			wins, conflicts int
			err             error
		}
		results := make(chan result, writers)
		for w := range writers {
			go func() {
				var r result
				for i := range rounds {
					_, err := st.Put(ctx, g.thread1, []byte(guideValue(fmt.Sprintf("w%d-%d", w, i))))
					switch {
					case err == nil:
						r.wins++
					case errors.Is(err, ErrConflict):
						r.conflicts++
					default:
						r.err = err
					}
				}
				results <- r
			}()
		}
		readErrs := make(chan error, 2)
		check := func(text string) error {
			v, _, ok := strings.Cut(text, "\n")
			if !ok || text != guideValue(v) {
				return fmt.Errorf("torn or foreign read of %d bytes: %.80q", len(text), text)
			}
			return nil
		}
		reads := make(chan int, 2)
		// readUntilDone reads with read until done is closed or a read
		// fails, then sends its count of reads and its error.
		readUntilDone := func(read func() error) {
			n := 0
			for {
				select {
				case <-done:
					reads <- n
					readErrs <- nil
					return
				default:
				}
				err := read()
				if errors.Is(err, ErrConflict) {
					continue // replaced ReadAttempts times while being read
				}
				if err != nil {
					reads <- n
					readErrs <- err
					return
				}
				n++
			}
		}
		go readUntilDone(func() error { // a Store in the guide's layout
			data, _, err := st.Get(ctx, g.thread1)
			if err != nil {
				return err
			}
			return check(string(data))
		})
		go readUntilDone(func() error { // a reader that knows only the guide
			text, ok, err := g.guideRead(ctx, g.thread1)
			switch {
			case err != nil:
				return err
			case !ok:
				return errors.New("no payload")
			}
			return check(text)
		})
		wins := 0
		for range writers {
			r := <-results
			if r.err != nil {
				t.Errorf("Put: %v, want success or ErrConflict", r.err)
			}
			wins += r.wins
		}
		close(done)
		for range 2 {
			if err := <-readErrs; err != nil {
				t.Error(err)
			}
			if n := <-reads; n == 0 {
				t.Error("a reader completed no read while the writers ran")
			}
		}
		if wins < rounds {
			t.Errorf("%d winning Puts, want at least %d", wins, rounds)
		}
		// Losers removed their chunks: only the current version's remain.
		info, err := st.Stat(ctx, g.thread1, func(o *Options) { o.ConsistentRead = true })
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"DynamoDB#Thread1#2012-03-15T20:42:54.023Z#ChunkVersion"}
		for seq := 1; seq <= info.Chunks; seq++ {
			want = append(want, fmt.Sprintf("DynamoDB#Thread1#2012-03-15T20:42:54.023Z#%s#%d", info.Version, seq))
		}
		slices.Sort(want)
		if d := cmp.Diff(want, scanKeys(t, g.c, g.chunks, "Id")); d != "" {
			t.Errorf("chunk table after the writers (-want +got):\n%s", d)
		}
	})
}

// TestGuideMigrate: the documented path from the guide's layout to this
// package's: a Store with Options.Guide (Write false) reads both layouts
// and writes its own; Migrate moves one item, keeping the caller's
// attributes and removing the guide's chunks and inline Message; a
// migrated item is readable by a Store in the guide's layout too.
func TestGuideMigrate(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		ctx := context.Background()
		g := newGuideEnv(t, srv)
		parts := []string{"first part of long message text...", "...second part of long message text...", "...third part of long message text"}
		g.writeGuideItems(t, parts)
		st := newStore(t, g.c, g.reply, g.chunks, func(o *Options) {
			o.ChunkKeyAttribute = GuideChunkKeyAttribute
			o.Guide = &Guide{}
			o.InlineLimit = 40
		})
		for key, want := range map[Key]string{g.thread1: strings.Join(parts, ""), g.short: "short message"} {
			info, err := st.Migrate(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if info.Guide || info.NoChecksum || len(info.Version) != versionLen {
				t.Errorf("Migrate %v: %+v, want this package's layout", key, info)
			}
			again, err := st.Migrate(ctx, key)
			if err != nil || again.Version != info.Version {
				t.Errorf("second Migrate %v: %v, version %s; want no change from %s", key, err, again.Version, info.Version)
			}
			for _, reader := range []*Store{st, newStore(t, g.c, g.reply, g.chunks, GuideLayout)} {
				got, _, err := reader.Get(ctx, key)
				if err != nil || string(got) != want {
					t.Errorf("Get %v after Migrate: %q, %v; want %q", key, got, err, want)
				}
			}
			out, err := g.c.GetItem(ctx, &dynamodb.GetItemInput{TableName: &g.reply, Key: key.item(), ConsistentRead: aws.Bool(true)})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := out.Item["Message"]; ok {
				t.Errorf("%v keeps the guide's Message after Migrate", key)
			}
			if _, ok := out.Item["ChunkSHA256"]; !ok {
				t.Errorf("%v has no ChunkSHA256 after Migrate", key)
			}
		}
		got, info, err := st.Get(ctx, g.thread1)
		if err != nil || info.Attributes["PostedBy"] == nil {
			t.Errorf("caller attribute lost by Migrate: %v, %v", info.Attributes, err)
		}
		_ = got
		for _, k := range scanKeys(t, g.c, g.chunks, "Id") {
			if strings.Contains(k, "#1#") {
				t.Errorf("guide chunk %s left after Migrate", k)
			}
		}
		// A guide-layout item replaced between Migrate's read and Put's
		// own read of the parent is not overwritten with the text read:
		// Put's condition alone would pass.
		g.writeGuideItems(t, parts)
		guide := newStore(t, g.c, g.reply, g.chunks, GuideLayout)
		p := newProbe()
		racing := newStore(t, srv.Client(p.option), g.reply, g.chunks, func(o *Options) {
			o.ChunkKeyAttribute = GuideChunkKeyAttribute
			o.Guide = &Guide{}
		})
		p.hooks(func(op string, n int) {
			if op == "GetItem" && n == 2 { // Put's read of the parent, after Get's
				if _, err := guide.Put(ctx, g.thread1, []byte("newer text")); err != nil {
					t.Error(err)
				}
			}
		}, nil)
		if _, err := racing.Migrate(ctx, g.thread1); !errors.Is(err, ErrConflict) {
			t.Errorf("Migrate racing a Put: %v, want ErrConflict", err)
		}
		if got, _, err := guide.Get(ctx, g.thread1); err != nil || string(got) != "newer text" {
			t.Errorf("after the race: %q, %v; want the racing Put's text", got, err)
		}
	})
}

// TestGuideAmbiguousFlip: a guide-layout Put whose parent update loses its
// response is settled as in this package's layout (ChunkPrevious records
// the version replaced): applied means success, not applied an error that
// is not ErrConflict with the old text still current.
func TestGuideAmbiguousFlip(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv)
		proxy, pc := newProxy(t, srv)
		ctx := context.Background()
		for i, tt := range []struct {
			name    string
			cfg     faultproxy.Config
			applied bool
		}{
			{"reset after", faultproxy.Config{ResetAfterRate: 1}, true},
			{"500 after", faultproxy.Config{ErrorAfterRate: 1}, true},
			{"500 before", faultproxy.Config{ErrorRate: 1}, false},
		} {
			t.Run(tt.name, func(t *testing.T) {
				st := newStore(t, pc, e.parents, e.chunks, GuideLayout, func(o *Options) {
					o.ChunkKeyAttribute = "ChunkKey"
					o.ChunkSize = 100
				})
				st.flipDelay = 100 * time.Microsecond
				pk := fmt.Sprint("guide-amb", i)
				key := sKey(pk)
				old := textPayload("old", 250)
				if _, err := st.Put(ctx, key, []byte(old)); err != nil {
					t.Fatal(err)
				}
				cfg := tt.cfg
				cfg.Ops, cfg.Keys = []string{"UpdateItem"}, []string{pk} // the flip, not the counter
				proxy.Set(cfg)
				text := textPayload("new", 350)
				_, err := st.Put(ctx, key, []byte(text))
				proxy.Set(faultproxy.Config{})
				want := old
				if tt.applied {
					want = text
					if err != nil {
						t.Fatalf("Put: %v, want success (the update was applied)", err)
					}
				} else if err == nil || errors.Is(err, ErrConflict) {
					t.Fatalf("Put: %v, want an error other than ErrConflict", err)
				}
				got, _, err := st.Get(ctx, key, func(o *Options) { o.ConsistentRead = true })
				if err != nil || string(got) != want {
					t.Errorf("Get: %.40q, %v; want %.40q", got, err, want)
				}
			})
		}
	})
}
