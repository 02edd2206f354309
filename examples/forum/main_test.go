package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard/dynashardtest"
	"github.com/dynashard/dynashard/examples/forum/forumsvc"
	"github.com/dynashard/dynashard/examples/internal/httpjson"
	"github.com/dynashard/dynashard/examples/internal/sortid"
	"github.com/dynashard/dynashard/examples/internal/svctest"
	"github.com/dynashard/dynashard/shard"
)

func TestMain(m *testing.M) { svctest.Main(m) }

// start runs the real program against s on a free loopback port until t
// ends, with tables of its own.
func start(t *testing.T, s *dynashardtest.Server) (*forumsvc.Client, forumsvc.Tables) {
	t.Helper()
	prefix := dynashardtest.TableName("forum") + "-"
	tables := forumsvc.TablesWithPrefix(prefix)
	t.Cleanup(func() { // runs after the service has stopped
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c := svctest.Client(t, s)
		for _, n := range tables.Names() {
			if _, err := c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(n)}); err != nil {
				t.Errorf("delete table %s: %v", n, err)
			}
		}
	})
	base := svctest.Start(t, run, "-endpoint", s.Endpoint(), "-addr", "127.0.0.1:0", "-table-prefix", prefix)
	return &forumsvc.Client{Client: httpjson.Client{Base: base}}, tables
}

// message returns n bytes of text: random characters, some of them
// multi-byte, so it compresses poorly (gzip cannot hide a large reply
// inside one item) and a byte-exact round trip means something.
func message(r *rand.Rand, n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,;:!?\n\t\"\\<>&"
	multi := []string{"é", "ß", "日本", "€", "🙂", "\u2028"}
	var b strings.Builder
	for b.Len() < n {
		if r.IntN(8) == 0 {
			if m := multi[r.IntN(len(multi))]; b.Len()+len(m) <= n {
				b.WriteString(m)
				continue
			}
		}
		b.WriteByte(alphabet[r.IntN(len(alphabet))])
	}
	return b.String()
}

func TestForum(t *testing.T) {
	svctest.Each(t, func(t *testing.T, s *dynashardtest.Server) {
		ctx := context.Background()
		c, tables := start(t, s)
		r := rand.New(rand.NewPCG(3, 4))
		const forum = "dynamodb"

		var threads []forumsvc.Thread
		for i := range 5 {
			th, err := c.CreateThread(ctx, forum, forumsvc.NewThread{
				Subject: fmt.Sprintf("Thread %d", i), Author: "ada", Message: message(r, 100),
			})
			if err != nil {
				t.Fatal(err)
			}
			threads = append(threads, th)
		}
		th := threads[2]

		// Replies on both sides of the 4 KiB inline limit and of the
		// 400 KB item limit, and one spanning several chunks.
		sizes := []int{1, 200, 201, 4 << 10, 5000, 64 << 10, 400_001, 900_000}
		for range 20 {
			sizes = append(sizes, 1+r.IntN(3000))
		}
		r.Shuffle(len(sizes), func(i, j int) { sizes[i], sizes[j] = sizes[j], sizes[i] })
		want := map[string]string{} // reply id → message
		var ids []string
		for _, n := range sizes {
			msg := message(r, n)
			rep, err := c.CreateReply(ctx, forum, th.ID, forumsvc.NewReply{Author: "bob", Message: msg})
			if err != nil {
				t.Fatalf("reply of %d bytes: %v", n, err)
			}
			if rep.Bytes != len(msg) || rep.Thread != th.ID || rep.Message != "" {
				t.Fatalf("reply of %d bytes: response %+v", n, rep)
			}
			want[rep.ID] = msg
			ids = append(ids, rep.ID)
		}
		slices.Sort(ids)

		t.Run("get replies byte-exact", func(t *testing.T) {
			for _, id := range ids {
				got, err := c.Reply(ctx, forum, th.ID, id)
				if err != nil {
					t.Fatalf("get %s: %v", id, err)
				}
				if got.Message != want[id] || got.Bytes != len(want[id]) {
					t.Errorf("reply %s: got %d bytes (Bytes %d), want %d bytes, equal: %v",
						id, len(got.Message), got.Bytes, len(want[id]), got.Message == want[id])
				}
			}
			// The large replies really went to the chunk table.
			if n := countItems(t, svctest.Client(t, s), tables.ReplyChunks); n < 3 {
				t.Errorf("chunk table holds %d chunks, want at least 3 for %d bytes of large replies", n, 900_000+400_001)
			}
		})

		t.Run("page through replies", func(t *testing.T) {
			for _, limit := range []int{1, 5} {
				var got []string
				cursor := ""
				for pages := 0; ; pages++ {
					if pages > len(ids) {
						t.Fatalf("limit %d: more pages than replies", limit)
					}
					p, err := c.ListReplies(ctx, forum, th.ID, limit, cursor)
					if err != nil {
						t.Fatalf("limit %d page %d: %v", limit, pages, err)
					}
					for _, x := range p.Replies {
						got = append(got, x.ID)
						checkPreview(t, x, want[x.ID])
					}
					if p.Next == "" {
						break
					}
					cursor = p.Next
				}
				if diff := cmp.Diff(ids, got); diff != "" {
					t.Errorf("limit %d: listed reply ids (-want +got):\n%s", limit, diff)
				}
			}
		})

		t.Run("threads", func(t *testing.T) {
			v, err := c.Thread(ctx, forum, th.ID)
			if err != nil || v.Replies != int64(len(ids)) || v.Thread != th {
				t.Errorf("thread: got %+v, %v; want %+v with %d replies", v, err, th, len(ids))
			}
			var got []forumsvc.Thread
			cursor := ""
			for {
				p, err := c.ListThreads(ctx, forum, 2, cursor)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, p.Threads...)
				if cursor = p.Next; cursor == "" {
					break
				}
			}
			if diff := cmp.Diff(threads, got); diff != "" {
				t.Errorf("listed threads (-want +got):\n%s", diff)
			}
		})

		t.Run("not found", func(t *testing.T) {
			missing := sortid.New(time.Now())
			for what, err := range map[string]error{
				"thread":             ignore(c.Thread(ctx, forum, missing)),
				"thread in a forum":  ignore(c.Thread(ctx, "other", th.ID)),
				"reply":              ignore(c.Reply(ctx, forum, th.ID, missing)),
				"reply elsewhere":    ignore(c.Reply(ctx, forum, threads[0].ID, ids[0])),
				"reply to a missing": ignore(c.CreateReply(ctx, forum, missing, forumsvc.NewReply{Author: "a", Message: "m"})),
				"replies of missing": ignore(c.ListReplies(ctx, forum, missing, 10, "")),
			} {
				if e := new(httpjson.Error); !errors.As(err, &e) || e.Status != http.StatusNotFound {
					t.Errorf("%s: got %v, want a 404", what, err)
				}
			}
		})

		t.Run("bad input", func(t *testing.T) {
			first, err := c.ListReplies(ctx, forum, th.ID, 2, "")
			if err != nil || first.Next == "" {
				t.Fatalf("first page: %v", err)
			}
			threadCursor, err := c.ListThreads(ctx, forum, 2, "")
			if err != nil || threadCursor.Next == "" {
				t.Fatalf("first thread page: %v", err)
			}
			b := []byte(first.Next)
			b[len(b)/2] ^= 'A' ^ 'B' // another base64url letter
			for _, tc := range []struct {
				what  string
				err   error
				field string
			}{
				{"forum name", ignore(c.CreateThread(ctx, "Not_A_Forum", forumsvc.NewThread{Subject: "s", Author: "a", Message: "m"})), "forum"},
				{"thread id", ignore(c.Thread(ctx, forum, "nope")), "thread"},
				{"reply id", ignore(c.Reply(ctx, forum, th.ID, "nope")), "reply"},
				{"no subject", ignore(c.CreateThread(ctx, forum, forumsvc.NewThread{Author: "a", Message: "m"})), "subject"},
				{"long subject", ignore(c.CreateThread(ctx, forum, forumsvc.NewThread{Subject: strings.Repeat("s", forumsvc.MaxSubject+1), Author: "a", Message: "m"})), "subject"},
				{"long thread message", ignore(c.CreateThread(ctx, forum, forumsvc.NewThread{Subject: "s", Author: "a", Message: strings.Repeat("m", forumsvc.MaxThreadMessage+1)})), "message"},
				{"blank reply", ignore(c.CreateReply(ctx, forum, th.ID, forumsvc.NewReply{Author: "a", Message: " \n "})), "message"},
				{"reply too long", ignore(c.CreateReply(ctx, forum, th.ID, forumsvc.NewReply{Author: "a", Message: strings.Repeat("m", forumsvc.MaxReply+1)})), "message"},
				{"no author", ignore(c.CreateReply(ctx, forum, th.ID, forumsvc.NewReply{Message: "m"})), "author"},
				{"limit", ignore(c.ListReplies(ctx, forum, th.ID, forumsvc.MaxLimit+1, "")), "limit"},
				{"tampered cursor", ignore(c.ListReplies(ctx, forum, th.ID, 2, string(b))), "cursor"},
				{"another thread's cursor", ignore(c.ListReplies(ctx, forum, threads[0].ID, 2, first.Next)), "cursor"},
				{"a thread cursor", ignore(c.ListReplies(ctx, forum, th.ID, 2, threadCursor.Next)), "cursor"},
			} {
				var e *httpjson.Error
				if !errors.As(tc.err, &e) || e.Status != http.StatusBadRequest || !e.Has(tc.field) {
					t.Errorf("%s: got %v, want a 400 naming %q", tc.what, tc.err, tc.field)
				}
			}
			// Nothing above was stored.
			if v, err := c.Thread(ctx, forum, th.ID); err != nil || v.Replies != int64(len(ids)) {
				t.Errorf("replies after bad input: got %d, %v; want %d", v.Replies, err, len(ids))
			}
		})
	})
}

// checkPreview checks a listed reply against the message it stands for.
func checkPreview(t *testing.T, x forumsvc.ReplySummary, msg string) {
	t.Helper()
	p := x.Preview
	ok := strings.HasPrefix(msg, p) && utf8.ValidString(p) && len(p) <= forumsvc.PreviewBytes &&
		(len(p) == len(msg) || len(p) > forumsvc.PreviewBytes-utf8.UTFMax) && x.Bytes == len(msg)
	if !ok {
		t.Errorf("reply %s: preview of %d bytes, Bytes %d, for a message of %d bytes: not its longest whole-character prefix of at most %d bytes",
			x.ID, len(p), x.Bytes, len(msg), forumsvc.PreviewBytes)
	}
}

func ignore[T any](_ T, err error) error { return err }

// countItems counts a table's items, skipping layout records (a sharded
// table holds one per base written; a chunk table, none).
func countItems(t *testing.T, c *dynamodb.Client, table string) int {
	t.Helper()
	n := 0
	for p := dynamodb.NewScanPaginator(c, &dynamodb.ScanInput{TableName: aws.String(table)}); p.HasMorePages(); {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range out.Items {
			if !shard.IsRecord(it) {
				n++
			}
		}
	}
	return n
}
