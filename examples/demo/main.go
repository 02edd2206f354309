// Command demo shows dynashard at work in well under a minute, with no AWS
// account: it starts an embedded DynamoDB Local through the test kit
// dynashardtest, runs the orders and forum example services in-process on
// loopback, drives them over HTTP as a client would, and prints what
// happened.
//
//	make demo            # or, in the examples module: cd examples && go run ./demo
//
// It creates a busy day of orders (2,000 by default) through POST /orders,
// sharded by day over 16 physical partition keys; pages through the day
// with GET /days/{day}/orders and checks every order comes back exactly
// once, in time order; fetches one order by id (one GetItem, then a cache
// hit); counts the day; and stores and reads back a 1 MiB forum reply,
// more than twice DynamoDB's 400 KB item limit. For each step it shows the
// HTTP calls and the DynamoDB requests they cost.
//
// Flags: -orders, -page, -reply-bytes and -clients size the run; -server
// dynalite uses dynalite (Node.js 20) instead of DynamoDB Local (Java 17);
// -endpoint URL uses a server someone else runs; -aws uses real DynamoDB,
// with region and credentials from the AWS SDK's default chain
// (environment, AWS_PROFILE, SSO, roles). The demo deletes the tables it
// created and stops everything it started, also on Ctrl-C.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/dynashard/dynashard/examples/forum/forumsvc"
	"github.com/dynashard/dynashard/examples/internal/backend"
	"github.com/dynashard/dynashard/examples/internal/httpjson"
	"github.com/dynashard/dynashard/examples/internal/sortid"
	"github.com/dynashard/dynashard/examples/orders/ordersvc"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C kills at once
	}()
	if _, err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// Summary is what the demo did, for its test.
type Summary struct {
	Orders       int    // orders created
	Day          string // their day
	Shards       int    // physical keys per day
	PerKey       []int  // orders per physical key, by suffix
	Pages        int    // pages listed
	Listed       int    // orders listed
	ExactlyOnce  bool   // every created order listed once, in id order
	Fetched      bool   // an order read by id equals the one created
	CacheHits    int64  // from reading it a second time
	Count        int64  // GET /days/{day}/count
	ReplyBytes   int    // size of the large reply
	ReplyChunks  int32  // chunk items it was stored in
	ReplyExact   bool   // read back byte for byte
	HTTPRequests int64
	DDBRequests  int64
}

const shards = 16

func run(ctx context.Context, args []string, out io.Writer) (*Summary, error) {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(out)
	var (
		bcfg       backend.Config
		nOrders    = fs.Int("orders", 2000, "orders to create for the busy day")
		pageSize   = fs.Int("page", 100, "orders per page when listing the day")
		replyBytes = fs.Int("reply-bytes", 1<<20, "size of the large forum reply")
		clients    = fs.Int("clients", 16, "concurrent HTTP clients creating orders")
	)
	bcfg.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if *nOrders < 1 || *pageSize < 1 || *pageSize > ordersvc.MaxLimit || *replyBytes < 1 || *replyBytes > forumsvc.MaxReply || *clients < 1 {
		return nil, fmt.Errorf("want -orders >= 1, -page 1..%d, -reply-bytes 1..%d, -clients >= 1", ordersvc.MaxLimit, forumsvc.MaxReply)
	}
	p := &printer{w: out}
	start := time.Now()
	p.line("dynashard demo")
	e, err := setUp(ctx, p, bcfg, *clients)
	if err != nil {
		if e != nil {
			err = errors.Join(err, e.tearDown())
		}
		return nil, err
	}

	s := &Summary{Orders: *nOrders, Shards: shards, ReplyBytes: *replyBytes}
	ddb0 := e.b.Requests.Snapshot()
	work := time.Now()
	err = busyDay(ctx, p, e, s, *clients, *pageSize)
	if err == nil {
		err = largeReply(ctx, p, e, s)
	}
	s.HTTPRequests = e.orders.Requests() + e.forum.Requests()
	s.DDBRequests = e.b.Requests.Snapshot().Sub(ddb0).Total()
	took := time.Since(work)
	if err := errors.Join(err, e.tearDown()); err != nil {
		return nil, err
	}

	if !s.ExactlyOnce || !s.Fetched || s.Count != int64(s.Orders) || !s.ReplyExact {
		return s, errors.New("the demo's own checks failed: see above")
	}
	p.line("")
	p.line("Summary: %s HTTP requests answered with %s DynamoDB requests in %s.", num(s.HTTPRequests), num(s.DDBRequests), round(took))
	p.line("  %s orders created over %d physical keys, listed in %d pages and counted; a %s-byte reply stored in %d %s and read back exactly.",
		num(s.Orders), shards, s.Pages, num(s.ReplyBytes), s.ReplyChunks, plural(int64(s.ReplyChunks), "chunk"))
	p.line("  Stopped both services, deleted %d tables%s; %s in all.", len(e.tables), e.stopped, since(start))
	return s, nil
}

// env is what the demo starts: a backend, tables and two services.
type env struct {
	b           *backend.Backend
	tables      []string
	forumTables forumsvc.Tables
	osvc        *ordersvc.Service
	orders      *ordersvc.Client
	forum       *forumsvc.Client
	stopServers context.CancelFunc
	servers     errgroup.Group
	stopped     string // ", stopped DynamoDB Local" once tearDown has
}

// setUp starts the backend, creates the tables and starts the services.
// If it fails after starting anything, it returns the env to tear down.
func setUp(ctx context.Context, p *printer, bcfg backend.Config, clients int) (*env, error) {
	t0 := time.Now()
	b, err := backend.Open(ctx, bcfg)
	if err != nil {
		return nil, err
	}
	p.line("  DynamoDB: %s (ready in %s)", b.Where, since(t0))
	e := &env{b: b, stopServers: func() {}}

	var tag [4]byte
	if _, err := rand.Read(tag[:]); err != nil {
		return e, err
	}
	prefix := "dynashard-demo-" + hex.EncodeToString(tag[:]) + "-"
	// Each table is described once; the CreateTable requests and the
	// services are built from the descriptions.
	ordersLayout := ordersvc.Layout(prefix+"Orders", shards)
	e.forumTables = forumsvc.TablesWithPrefix(prefix)
	e.tables = append([]string{ordersLayout.Table}, e.forumTables.Names()...)
	ordersIn, err := ordersLayout.CreateTableInput()
	if err != nil {
		return e, err
	}
	forumIns, err := e.forumTables.Inputs()
	if err != nil {
		return e, err
	}
	t0 = time.Now()
	for _, in := range append([]*dynamodb.CreateTableInput{ordersIn}, forumIns...) {
		if err := b.EnsureTable(ctx, in); err != nil {
			return e, err
		}
	}
	p.line("  tables: %s (created in %s)", strings.Join(e.tables, ", "), since(t0))

	logger := log.New(p.w, "  service: ", 0)
	cursorKey, err := httpjson.CursorKey("") // random: cursors live as long as the demo
	if err != nil {
		return e, err
	}
	if e.osvc, err = ordersvc.New(b.Client, ordersLayout, ordersvc.Config{CursorKey: cursorKey, CacheEntries: 10_000, Log: logger}); err != nil {
		return e, err
	}
	fsvc, err := forumsvc.New(b.Client, e.forumTables, forumsvc.Config{CursorKey: cursorKey, Log: logger})
	if err != nil {
		return e, err
	}
	var srvCtx context.Context
	srvCtx, e.stopServers = context.WithCancel(context.WithoutCancel(ctx))
	var urls []string
	for _, h := range []http.Handler{e.osvc.Handler(), fsvc.Handler()} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return e, err
		}
		e.servers.Go(func() error { return httpjson.Serve(srvCtx, l, h, 10*time.Second) })
		urls = append(urls, "http://"+l.Addr().String())
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	e.orders = &ordersvc.Client{Client: httpjson.Client{Base: urls[0], HTTP: hc}}
	e.forum = &forumsvc.Client{Client: httpjson.Client{Base: urls[1], HTTP: hc}}
	p.line("  orders service: %s   forum service: %s", urls[0], urls[1])
	return e, nil
}

// tearDown stops the services (letting requests in flight finish),
// deletes the tables and stops the embedded server.
func (e *env) tearDown() error {
	e.stopServers()
	err := e.servers.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = errors.Join(err, e.b.DeleteTables(ctx, e.tables...))
	if e.b.Embedded != "" {
		e.stopped = ", stopped " + e.b.Embedded
	}
	return errors.Join(err, e.b.Close())
}

// busyDay creates the orders, pages through the day, reads one order and
// counts the day.
func busyDay(ctx context.Context, p *printer, e *env, s *Summary, clients, pageSize int) error {
	b, c := e.b, e.orders
	// Yesterday: a whole day's orders, all in the past.
	day := time.Now().UTC().AddDate(0, 0, -1).Truncate(24 * time.Hour)
	s.Day = day.Format(sortid.DayLayout)
	r := mrand.New(mrand.NewPCG(uint64(day.Unix()), 1))
	inputs := make([]ordersvc.NewOrder, s.Orders)
	for i := range inputs {
		in := ordersvc.NewOrder{
			Customer: fmt.Sprintf("customer-%04d", r.IntN(500)),
			Currency: "EUR",
			PlacedAt: day.Add(time.Duration(r.Int64N(int64(24 * time.Hour)))).Format(time.RFC3339Nano),
		}
		for range 1 + r.IntN(3) {
			in.Lines = append(in.Lines, ordersvc.Line{SKU: fmt.Sprintf("sku-%03d", r.IntN(200)), Quantity: 1 + r.IntN(5), PriceCents: int64(100 + r.IntN(5000))})
		}
		inputs[i] = in
	}

	p.line("")
	p.line("1. A busy day: %s orders for %s through POST /orders, %d clients at once", num(s.Orders), s.Day, clients)
	mark := p.mark(b, c)
	created := make([]ordersvc.Order, len(inputs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(clients)
	for i, in := range inputs {
		g.Go(func() error {
			o, err := c.Create(gctx, in)
			created[i] = o
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("create orders: %w", err)
	}
	el := time.Since(mark.t)
	p.line("   created %s in %s (%s orders/s); %s", num(s.Orders), round(el), num(int(float64(s.Orders)/el.Seconds())), mark.cost())
	if d := mark.ddb(); d["GetItem"] > 0 || d["PutItem"] > int64(s.Orders) {
		p.line("   the GetItems, and the PutItems beyond one per order, write and check the day's layout record")
		p.line("   (shard.Layout) as the first writers race; later requests for the day in this process skip that")
	}
	layout := e.osvc.Layout()
	s.PerKey = make([]int, layout.N())
	for _, o := range created {
		s.PerKey[layout.Strategy.Pick(o.ID)-1]++
	}
	lo, hi := s.PerKey[0], s.PerKey[0]
	for _, n := range s.PerKey {
		lo, hi = min(lo, n), max(hi, n)
	}
	p.line("   shard.Hash spread them over %d physical keys %s … %s: %d to %d orders per key",
		layout.N(), layout.Codec.Key(s.Day, 1), layout.Codec.Key(s.Day, layout.N()), lo, hi)

	p.line("")
	p.line("2. Paging through the day: GET /days/%s/orders?limit=%d&cursor=…", s.Day, pageSize)
	mark = p.mark(b, c)
	var listed []string
	cursor := ""
	for {
		page, err := c.List(ctx, s.Day, pageSize, cursor)
		if err != nil {
			return fmt.Errorf("list page %d: %w", s.Pages+1, err)
		}
		s.Pages++
		for _, o := range page.Orders {
			listed = append(listed, o.ID)
		}
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	s.Listed = len(listed)
	s.ExactlyOnce = exactlyOnceInOrder(created, listed)
	p.line("   %d pages, %s orders; every order exactly once, in time order: %s", s.Pages, num(s.Listed), yes(s.ExactlyOnce))
	p.line("   %s: each page queries the %d keys in parallel and merges them, and its signed cursor", mark.cost(), shards)
	p.line("   records where every key stopped")

	p.line("")
	o := created[len(created)/2]
	p.line("3. One order by id: GET /orders/%s", o.ID)
	mark = p.mark(b, c)
	got, err := c.Get(ctx, o.ID)
	if err != nil {
		return fmt.Errorf("get order: %w", err)
	}
	s.Fetched = got.ID == o.ID && got.Customer == o.Customer && slices.Equal(got.Lines, o.Lines) &&
		got.TotalCents == o.TotalCents && got.PlacedAt.Equal(o.PlacedAt)
	p.line("   %s, %d lines, %d.%02d %s; the same as created: %s", got.Customer, len(got.Lines), got.TotalCents/100, got.TotalCents%100, got.Currency, yes(s.Fetched))
	p.line("   %s: the id holds the day, and day and id give the physical key", mark.cost())
	hits := e.osvc.CacheStats().Hits
	mark = p.mark(b, c)
	if _, err := c.Get(ctx, o.ID); err != nil {
		return fmt.Errorf("get order again: %w", err)
	}
	s.CacheHits = e.osvc.CacheStats().Hits - hits
	p.line("   asked again: %s, %d cache hit (the guide's cache for popular items)", mark.cost(), s.CacheHits)

	p.line("")
	p.line("4. Counting the day: GET /days/%s/count", s.Day)
	mark = p.mark(b, c)
	if s.Count, err = c.Count(ctx, s.Day); err != nil {
		return fmt.Errorf("count: %w", err)
	}
	p.line("   %s orders; %s with Select COUNT: no item leaves DynamoDB", num(s.Count), mark.cost())
	return nil
}

// exactlyOnceInOrder reports whether listed holds the created orders'
// ids, each once, in id (time) order.
func exactlyOnceInOrder(created []ordersvc.Order, listed []string) bool {
	want := make(map[string]bool, len(created))
	for _, o := range created {
		want[o.ID] = true
	}
	for i, id := range listed {
		if !want[id] || (i > 0 && listed[i-1] >= id) {
			return false
		}
		delete(want, id)
	}
	return len(want) == 0
}

// largeReply stores a reply beyond the item limit and reads it back.
func largeReply(ctx context.Context, p *printer, e *env, s *Summary) error {
	b, c := e.b, e.forum
	const forum = "dynamodb"
	th, err := c.CreateThread(ctx, forum, forumsvc.NewThread{Subject: "How large can a reply be?", Author: "ada", Message: "Larger than 400 KB?"})
	if err != nil {
		return fmt.Errorf("create thread: %w", err)
	}
	msg := longText(s.ReplyBytes)
	p.line("")
	p.line("5. A %s-byte forum reply (DynamoDB's item limit is 400 KB): POST /forums/%s/threads/%s/replies", num(s.ReplyBytes), forum, th.ID)
	mark := p.mark(b, c)
	rep, err := c.CreateReply(ctx, forum, th.ID, forumsvc.NewReply{Author: "bob", Message: msg})
	if err != nil {
		return fmt.Errorf("create reply: %w", err)
	}
	took, cost := time.Since(mark.t), mark.cost()
	stored, err := storedForm(ctx, b, e.forumTables.Reply, rep.ID)
	if err != nil {
		return err
	}
	s.ReplyChunks = stored.ChunkCount
	p.line("   stored in %s: gzip made it %s bytes, written as %d chunk %s of at most 384 KiB,", round(took), num(stored.ChunkStoredBytes), s.ReplyChunks, plural(int64(s.ReplyChunks), "item"))
	p.line("   then switched in by one conditional update of its Reply item; %s", cost)
	mark = p.mark(b, c)
	got, err := c.Reply(ctx, forum, th.ID, rep.ID)
	if err != nil {
		return fmt.Errorf("get reply: %w", err)
	}
	s.ReplyExact = got.Message == msg
	sum := sha256.Sum256([]byte(got.Message))
	p.line("   read back %s bytes in %s, SHA-256 %x…, identical: %s; %s", num(len(got.Message)), round(time.Since(mark.t)), sum[:6], yes(s.ReplyExact), mark.cost())
	return nil
}

// storedForm reads what the chunk store recorded in a reply's parent
// item (see package chunk's doc for these attributes). A demo may look
// under the hood; a service has no need to.
func storedForm(ctx context.Context, b *backend.Backend, table, id string) (stored struct{ ChunkCount, ChunkStoredBytes int32 }, err error) {
	in := &dynamodb.ScanInput{
		TableName:                 aws.String(table),
		FilterExpression:          aws.String("id = :id"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":id": &types.AttributeValueMemberS{Value: id}},
		ProjectionExpression:      aws.String("ChunkCount, ChunkStoredBytes"),
	}
	for p := dynamodb.NewScanPaginator(b.Client, in); p.HasMorePages(); {
		out, err := p.NextPage(ctx)
		if err != nil {
			return stored, fmt.Errorf("scan %s: %w", table, err)
		}
		if len(out.Items) > 0 {
			return stored, attributevalue.UnmarshalMap(out.Items[0], &stored)
		}
	}
	return stored, fmt.Errorf("reply %s not in %s", id, table)
}

// longText returns n bytes of text that compresses about as well as a
// long post full of pasted logs and identifiers: roughly 2:1.
func longText(n int) string {
	r := mrand.New(mrand.NewPCG(7, 7))
	const letters = "etaoinshrdlucmfwypvbgkqjxz0123456789"
	var buf bytes.Buffer
	for buf.Len() < n {
		for range 2 + r.IntN(9) {
			buf.WriteByte(letters[min(r.IntN(len(letters)), r.IntN(len(letters)))]) // skewed towards common letters
		}
		if r.IntN(14) == 0 {
			buf.WriteString(".\n")
		} else {
			buf.WriteByte(' ')
		}
	}
	return buf.String()[:n]
}

// printer writes the demo's report.
type printer struct {
	mu sync.Mutex
	w  io.Writer
}

func (p *printer) line(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, format+"\n", args...)
}

// mark remembers the counters at the start of a step.
type mark struct {
	t    time.Time
	b    *backend.Backend
	c    interface{ Requests() int64 }
	ddb0 backend.Counts
	http int64
}

func (p *printer) mark(b *backend.Backend, c interface{ Requests() int64 }) mark {
	return mark{t: time.Now(), b: b, c: c, ddb0: b.Requests.Snapshot(), http: c.Requests()}
}

// ddb returns the DynamoDB requests sent since the mark.
func (m mark) ddb() backend.Counts { return m.b.Requests.Snapshot().Sub(m.ddb0) }

// cost says what the step cost: "1 HTTP request → DynamoDB GetItem 1".
func (m mark) cost() string {
	d := m.ddb()
	h := m.c.Requests() - m.http
	if len(d) == 0 {
		return fmt.Sprintf("%s HTTP %s, no DynamoDB request", num(h), plural(h, "request"))
	}
	return fmt.Sprintf("%s HTTP %s → DynamoDB %s", num(h), plural(h, "request"), d)
}

func plural(n int64, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "NO"
}

func since(t time.Time) string { return round(time.Since(t)).String() }

func round(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(10 * time.Millisecond)
}

// num formats n with thousands separators: 12,345.
func num[T ~int | ~int32 | ~int64](n T) string {
	s := strconv.FormatInt(int64(n), 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}
