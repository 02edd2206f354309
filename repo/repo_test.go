package repo_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard/chunk"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/repo"
	"github.com/dynashard/dynashard/scatter"
	"github.com/dynashard/dynashard/shard"
)

type Order struct {
	Day     string `dynamodbav:"pk"` // set by the repo to the physical key on reads
	ID      string `dynamodbav:"sk"`
	Amount  int    `dynamodbav:"amount"`
	Version int64  `dynamodbav:"ver,omitempty"`
}

type Reply struct {
	Key     string `dynamodbav:"pk"`
	ID      string `dynamodbav:"sk"`
	Author  string `dynamodbav:"author"`
	Body    []byte `dynamodbav:"body"`
	Subject string `dynamodbav:"subject,omitempty"`
	Text    string `dynamodbav:"text,omitempty"`
}

func TestPutGetListCount(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		r := newRepo[Order](t, s.Client(), newTable(t, s, 7))
		var want []string
		for i := range 60 {
			id := fmt.Sprintf("o%03d", i)
			if _, err := r.Put(ctx, "2026-11-22", Order{ID: id, Amount: i}); err != nil {
				t.Fatal(err)
			}
			want = append(want, id)
		}
		// Another day's item must not show up.
		if _, err := r.Put(ctx, "2026-11-23", Order{ID: "other"}); err != nil {
			t.Fatal(err)
		}
		got, err := r.Get(ctx, "2026-11-22", "o042")
		if err != nil || got.Amount != 42 {
			t.Fatalf("Get: got %+v, %v", got, err)
		}
		if _, err := r.Get(ctx, "2026-11-22", "missing"); !errors.Is(err, repo.ErrNotFound) {
			t.Errorf("Get missing: got %v, want ErrNotFound", err)
		}
		var ids []string
		var cursor scatter.Cursor
		for {
			page, next, err := r.List(ctx, "2026-11-22", 7, cursor)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range page {
				ids = append(ids, o.ID)
			}
			if next == "" {
				break
			}
			cursor = next
		}
		if diff := cmp.Diff(want, ids); diff != "" {
			t.Errorf("paged List (-want +got):\n%s", diff)
		}
		var all []string
		for o, err := range r.All(ctx, "2026-11-22") {
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, o.ID)
		}
		if diff := cmp.Diff(want, all); diff != "" {
			t.Errorf("All (-want +got):\n%s", diff)
		}
		if n, err := r.Count(ctx, "2026-11-22"); err != nil || n != 60 {
			t.Errorf("Count: got %d, %v; want 60", n, err)
		}
		if err := r.Delete(ctx, "2026-11-22", "o042"); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Get(ctx, "2026-11-22", "o042"); !errors.Is(err, repo.ErrNotFound) {
			t.Errorf("Get after Delete: got %v, want ErrNotFound", err)
		}
	})
}

func TestErrors(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		l := newTable(t, s, 16)
		r := newRepo[Order](t, s.Client(), l, func(o *repo.Options) { o.CursorKey = []byte("a cursor key of at least 16 bytes") })
		if _, err := r.Put(ctx, "", Order{ID: "a"}); !errors.Is(err, repo.ErrInvalid) {
			t.Errorf("empty base: got %v, want ErrInvalid", err)
		}
		if _, err := r.Put(ctx, "d", Order{}); !errors.Is(err, repo.ErrInvalid) {
			t.Errorf("empty id: got %v, want ErrInvalid", err)
		}
		if _, err := r.Put(ctx, strings.Repeat("x", 2048), Order{ID: "a"}); !errors.Is(err, repo.ErrInvalid) {
			t.Errorf("base too long: got %v, want ErrInvalid", err)
		}
		if _, _, err := r.List(ctx, "d", 0, ""); !errors.Is(err, repo.ErrInvalid) {
			t.Errorf("limit 0: got %v, want ErrInvalid", err)
		}
		for i := range 3 {
			r.Put(ctx, "d", Order{ID: fmt.Sprint(i)})
		}
		_, next, err := r.List(ctx, "d", 1, "")
		if err != nil || next == "" {
			t.Fatalf("List: %q, %v", next, err)
		}
		if _, _, err := r.List(ctx, "other-day", 1, next); !errors.Is(err, repo.ErrInvalidCursor) || !errors.Is(err, repo.ErrInvalid) {
			t.Errorf("cursor of another base: got %v, want ErrInvalidCursor", err)
		}
		tampered := next[:len(next)-2] + "AA"
		if tampered == next {
			tampered = next[:len(next)-2] + "BB"
		}
		if _, _, err := r.List(ctx, "d", 1, tampered); !errors.Is(err, repo.ErrInvalidCursor) {
			t.Errorf("tampered cursor: got %v, want ErrInvalidCursor", err)
		}
		random := l
		random.Strategy = shard.Random(4)
		if _, err := repo.New[Order](s.Client(), random); !errors.Is(err, repo.ErrInvalid) {
			t.Errorf("Random strategy: got %v, want ErrInvalid", err)
		}
	})
}

func TestOptimisticLocking(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		r := newRepo[Order](t, s.Client(), newTable(t, s, 16), func(o *repo.Options) { o.Version = "ver" })
		v1, err := r.Put(ctx, "d", Order{ID: "a", Amount: 1})
		if err != nil || v1.Version != 1 {
			t.Fatalf("create: got %+v, %v; want version 1", v1, err)
		}
		if _, err := r.Put(ctx, "d", Order{ID: "a", Amount: 9}); !errors.Is(err, repo.ErrConflict) {
			t.Errorf("second create: got %v, want ErrConflict", err)
		}
		v1.Amount = 2
		v2, err := r.Put(ctx, "d", v1)
		if err != nil || v2.Version != 2 {
			t.Fatalf("update: got %+v, %v; want version 2", v2, err)
		}
		v1.Amount = 3
		if _, err := r.Put(ctx, "d", v1); !errors.Is(err, repo.ErrConflict) {
			t.Errorf("stale update: got %v, want ErrConflict", err)
		}
		var ccf *types.ConditionalCheckFailedException
		_, err = r.Put(ctx, "d", v1)
		if !errors.As(err, &ccf) {
			t.Errorf("conflict does not unwrap to the SDK error: %v", err)
		}
		// Racing writers from one read: exactly one wins.
		var wg sync.WaitGroup
		var mu sync.Mutex
		wins := 0
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				w := v2
				w.Amount = 100 + i
				if _, err := r.Put(ctx, "d", w); err == nil {
					mu.Lock()
					wins++
					mu.Unlock()
				} else if !errors.Is(err, repo.ErrConflict) {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if wins != 1 {
			t.Errorf("%d of 8 racing writers won, want exactly 1", wins)
		}
		got, _ := r.Get(ctx, "d", "a")
		if got.Version != 3 {
			t.Errorf("version after the race = %d, want 3", got.Version)
		}
	})
}

func TestCacheThroughRepo(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		r := newRepo[Order](t, s.Client(), newTable(t, s, 16), func(o *repo.Options) { o.CacheEntries = 100 })
		r.Put(ctx, "d", Order{ID: "a", Amount: 1})
		for range 5 {
			if got, err := r.Get(ctx, "d", "a"); err != nil || got.Amount != 1 {
				t.Fatalf("got %+v, %v", got, err)
			}
		}
		if st := r.CacheStats(); st.Hits != 4 || st.Misses != 1 {
			t.Errorf("stats %+v, want 4 hits and 1 miss", st)
		}
		r.Put(ctx, "d", Order{ID: "a", Amount: 2})
		if got, _ := r.Get(ctx, "d", "a"); got.Amount != 2 {
			t.Errorf("after a write through the repo: got %+v, want amount 2", got)
		}
		r.Delete(ctx, "d", "a")
		if _, err := r.Get(ctx, "d", "a"); !errors.Is(err, repo.ErrNotFound) {
			t.Errorf("after delete: got %v, want ErrNotFound", err)
		}
	})
}

func TestLargeField(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		l := newTable(t, s, 3)
		st := newStore(t, s, s.Client(), l, func(o *chunk.Options) { o.InlineLimit = 1000 })
		r := newRepo[Reply](t, s.Client(), l, large("body", st))
		sizes := []int{0, 10, 999, 1000, 1001, 500_000, 1_200_000}
		var want []Reply
		for i, n := range sizes {
			rep := Reply{ID: fmt.Sprintf("r%02d", i), Author: "ann", Body: bytes.Repeat([]byte{byte('a' + i)}, n)}
			if n == 0 {
				rep.Body = nil
			}
			if _, err := r.Put(ctx, "thread1", rep); err != nil {
				t.Fatalf("size %d: %v", n, err)
			}
			want = append(want, rep)
		}
		for _, w := range want {
			got, err := r.Get(ctx, "thread1", w.ID)
			if err != nil || !bytes.Equal(got.Body, w.Body) || got.Author != "ann" {
				t.Errorf("Get %s: %d bytes, author %q, %v; want %d bytes", w.ID, len(got.Body), got.Author, err, len(w.Body))
			}
		}
		var listed []Reply
		var cursor scatter.Cursor
		for {
			page, next, err := r.List(ctx, "thread1", 2, cursor)
			if err != nil {
				t.Fatal(err)
			}
			listed = append(listed, page...)
			if cursor = next; next == "" {
				break
			}
		}
		if len(listed) != len(want) {
			t.Fatalf("listed %d replies, want %d", len(listed), len(want))
		}
		for i := range want {
			if listed[i].ID != want[i].ID || !bytes.Equal(listed[i].Body, want[i].Body) {
				t.Errorf("listed[%d] = %s with %d bytes, want %s with %d", i, listed[i].ID, len(listed[i].Body), want[i].ID, len(want[i].Body))
			}
		}
		// A string large field comes back as a string.
		type Note struct {
			Key  string `dynamodbav:"pk"`
			ID   string `dynamodbav:"sk"`
			Text string `dynamodbav:"text"`
		}
		notes := newRepo[Note](t, s.Client(), l, large("text", st))
		text := strings.Repeat("é", 300_000)
		if _, err := notes.Put(ctx, "notes", Note{ID: "n1", Text: text}); err != nil {
			t.Fatal(err)
		}
		if got, err := notes.Get(ctx, "notes", "n1"); err != nil || got.Text != text {
			t.Errorf("string field: got %d bytes, %v", len(got.Text), err)
		}
		if err := r.Delete(ctx, "thread1", "r06"); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Get(ctx, "thread1", "r06"); !errors.Is(err, repo.ErrNotFound) {
			t.Errorf("after delete: got %v, want ErrNotFound", err)
		}
		ids := []string{}
		for rep, err := range r.All(ctx, "thread1") {
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, rep.ID)
		}
		if slices.Contains(ids, "r06") || len(ids) != len(want)-1 {
			t.Errorf("All after delete: %v", ids)
		}
	})
}

func TestLargeFieldWithVersion(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		l := newTable(t, s, 16)
		st := newStore(t, s, s.Client(), l)
		type Doc struct {
			Key  string `dynamodbav:"pk"`
			ID   string `dynamodbav:"sk"`
			Body []byte `dynamodbav:"body"`
			Ver  int64  `dynamodbav:"ver"`
		}
		r := newRepo[Doc](t, s.Client(), l, large("body", st), func(o *repo.Options) { o.Version = "ver" })
		big := bytes.Repeat([]byte("x"), 900_000)
		d1, err := r.Put(ctx, "b", Doc{ID: "d", Body: big})
		if err != nil || d1.Ver != 1 {
			t.Fatalf("create: %+v, %v", d1.Ver, err)
		}
		if _, err := r.Put(ctx, "b", Doc{ID: "d", Body: []byte("y")}); !errors.Is(err, repo.ErrConflict) {
			t.Errorf("second create: got %v, want ErrConflict", err)
		}
		got, err := r.Get(ctx, "b", "d")
		if err != nil || !bytes.Equal(got.Body, big) || got.Ver != 1 {
			t.Errorf("after refused write: %d bytes, ver %d, %v", len(got.Body), got.Ver, err)
		}
		d1.Body = []byte("small now")
		if d2, err := r.Put(ctx, "b", d1); err != nil || d2.Ver != 2 {
			t.Errorf("update: ver %d, %v", d2.Ver, err)
		}
	})
}

func TestCreate(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		l := newTable(t, s, 16)
		r := newRepo[Order](t, s.Client(), l)
		if _, err := r.Create(ctx, "d", Order{ID: "a", Amount: 1}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Create(ctx, "d", Order{ID: "a", Amount: 2}); !errors.Is(err, repo.ErrConflict) {
			t.Errorf("second Create: got %v, want ErrConflict", err)
		}
		if got, _ := r.Get(ctx, "d", "a"); got.Amount != 1 {
			t.Errorf("after refused Create: amount %d, want 1", got.Amount)
		}
		// The same id under another base is another item.
		if _, err := r.Create(ctx, "e", Order{ID: "a"}); err != nil {
			t.Errorf("Create under another base: %v", err)
		}
		big := newRepo[Reply](t, s.Client(), l, large("body", newStore(t, s, s.Client(), l)))
		if _, err := big.Create(ctx, "t", Reply{ID: "r", Body: bytes.Repeat([]byte("z"), 500_000)}); err != nil {
			t.Fatal(err)
		}
		if _, err := big.Create(ctx, "t", Reply{ID: "r", Body: []byte("other")}); !errors.Is(err, repo.ErrConflict) {
			t.Errorf("second large Create: got %v, want ErrConflict", err)
		}
	})
}

// TestListSkipLarge: SkipLarge, per call or for the Repo, lists items
// without reading their large values: no BatchGetItem.
func TestListSkipLarge(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		l := newTable(t, s, 16)
		cc, sent := countingClient(s)
		st := newStore(t, s, cc, l)
		r := newRepo[Reply](t, cc, l, large("body", st))
		for i := range 5 {
			if _, err := r.Put(ctx, "t", Reply{ID: fmt.Sprint(i), Author: "bo", Body: bytes.Repeat([]byte("q"), 100_000*(i+1))}); err != nil {
				t.Fatal(err)
			}
		}
		skip := func(o *repo.Options) { o.SkipLarge = true }
		sent.reset()
		page, _, err := r.List(ctx, "t", 10, "", skip)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) != 5 || sent.of("BatchGetItem") != 0 {
			t.Fatalf("got %d items with %d BatchGetItem requests, want 5 with none", len(page), sent.of("BatchGetItem"))
		}
		for _, rep := range page {
			if rep.Body != nil || rep.Author != "bo" {
				t.Errorf("item %s: body %d bytes, author %q; want no body, author bo", rep.ID, len(rep.Body), rep.Author)
			}
		}
		full, _, err := r.List(ctx, "t", 10, "")
		if err != nil {
			t.Fatal(err)
		}
		for i, rep := range full {
			if len(rep.Body) != 100_000*(i+1) {
				t.Errorf("item %s: body %d bytes, want %d", rep.ID, len(rep.Body), 100_000*(i+1))
			}
		}
		testSkipLarge(t, r, sent)
		// SkipLarge set for the Repo, and turned off for one call.
		skipping := newRepo[Reply](t, cc, l, large("body", st), skip)
		sent.reset()
		page, _, err = skipping.List(ctx, "t", 10, "")
		if err != nil || len(page) != 5 || sent.of("BatchGetItem") != 0 {
			t.Errorf("Repo with SkipLarge: %d items, %d BatchGetItem requests, %v; want 5, none", len(page), sent.of("BatchGetItem"), err)
		}
		page, _, err = skipping.List(ctx, "t", 10, "", func(o *repo.Options) { o.SkipLarge = false })
		if err != nil || len(page) != 5 || len(page[4].Body) != 500_000 {
			t.Errorf("SkipLarge turned off per call: %d items, %v; want 5 with bodies", len(page), err)
		}
		// Fields that shape the Repo are not changed per call.
		page, _, err = r.List(ctx, "t", 10, "", func(o *repo.Options) { o.Large = nil })
		if err != nil || len(page) != 5 || len(page[4].Body) != 500_000 {
			t.Errorf("Large cleared per call: %d items, %v; want 5 with bodies, as the Repo's Options say", len(page), err)
		}
	})
}

// testSkipLarge checks SkipLarge per call of All.
func testSkipLarge(t *testing.T, r *repo.Repo[Reply], sent *requests) {
	t.Helper()
	ctx := context.Background()
	sent.reset()
	n := 0
	for rep, err := range r.All(ctx, "t", func(o *repo.Options) { o.SkipLarge = true }) {
		if err != nil {
			t.Fatal(err)
		}
		if rep.Body != nil || rep.Author != "bo" {
			t.Errorf("All, item %s: body %d bytes, author %q; want no body, author bo", rep.ID, len(rep.Body), rep.Author)
		}
		n++
	}
	if n != 5 || sent.of("BatchGetItem") != 0 {
		t.Errorf("All with SkipLarge: %d items with %d BatchGetItem requests, want 5 with none", n, sent.of("BatchGetItem"))
	}
	sent.reset()
	n = 0
	for rep, err := range r.All(ctx, "t") {
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Body) != 100_000*(n+1) {
			t.Errorf("All, item %s: body %d bytes, want %d", rep.ID, len(rep.Body), 100_000*(n+1))
		}
		n++
	}
	if sent.of("BatchGetItem") == 0 {
		t.Errorf("All without SkipLarge sent no BatchGetItem")
	}
}
