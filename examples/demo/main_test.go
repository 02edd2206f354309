package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynashard/dynashard/dynashardtest"
	"github.com/dynashard/dynashard/examples/internal/svctest"
)

func TestMain(m *testing.M) { svctest.Main(m) }

func TestDemo(t *testing.T) {
	svctest.Each(t, func(t *testing.T, srv *dynashardtest.Server) {
		const orders, page, reply = 61, 7, 400_001
		const pages = (orders + page - 1) / page
		// Every order is one POST; then the pages, two GETs of one order, a
		// count, a thread, a reply and its read.
		const httpRequests = orders + pages + 2 + 1 + 3
		var out bytes.Buffer
		s, err := run(context.Background(), []string{
			"-endpoint", srv.Endpoint(), "-orders", fmt.Sprint(orders), "-page", fmt.Sprint(page),
			"-reply-bytes", fmt.Sprint(reply), "-clients", "4",
		}, &out)
		if err != nil {
			t.Fatalf("demo: %v\noutput:\n%s", err, out.String())
		}
		perKey := 0
		for _, n := range s.PerKey {
			perKey += n
		}
		for _, c := range []struct {
			what      string
			got, want any
		}{
			{"orders", s.Orders, orders},
			{"orders per key, summed", perKey, orders},
			{"physical keys", len(s.PerKey), shards},
			{"listed", s.Listed, orders},
			{"pages", s.Pages, pages},
			{"each once, in order", s.ExactlyOnce, true},
			{"fetched", s.Fetched, true},
			{"cache hits", s.CacheHits, int64(1)},
			{"count", s.Count, int64(orders)},
			{"reply bytes", s.ReplyBytes, reply},
			{"reply exact", s.ReplyExact, true},
			{"reply in chunks", s.ReplyChunks > 0, true},
			{"HTTP requests", s.HTTPRequests, int64(httpRequests)},
		} {
			if c.got != c.want {
				t.Errorf("%s: got %v, want %v", c.what, c.got, c.want)
			}
		}
		// The printout tells the same story.
		for _, want := range []string{
			fmt.Sprintf("1. A busy day: %d orders", orders),
			fmt.Sprintf("created %d in", orders),
			fmt.Sprintf("%d pages, %d orders; every order exactly once, in time order: yes", pages, orders),
			fmt.Sprintf("A %s-byte forum reply", num(reply)),
			fmt.Sprintf("read back %s bytes", num(reply)),
			"identical: yes",
			fmt.Sprintf("Summary: %d HTTP requests", httpRequests),
		} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("output lacks %q:\n%s", want, out.String())
			}
		}
		// It deleted what it created.
		p := dynamodb.NewListTablesPaginator(svctest.Client(t, srv), &dynamodb.ListTablesInput{})
		for p.HasMorePages() {
			tables, err := p.NextPage(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range tables.TableNames {
				if strings.HasPrefix(name, "dynashard-demo-") {
					t.Errorf("table %s left behind", name)
				}
			}
		}
	})
}

func TestNum(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0"}, {999, "999"}, {1000, "1,000"}, {-1000, "-1,000"}, {1048576, "1,048,576"}, {-999999, "-999,999"},
	} {
		if got := num(tc.n); got != tc.want {
			t.Errorf("num(%d): got %q, want %q", tc.n, got, tc.want)
		}
	}
}
