// Command orders is an HTTP JSON order service that uses dynashard as its
// repository layer: orders are sharded by day over N physical partition
// keys with shard.Hash, read back by id with one GetItem, and listed a day
// at a time with a parallel scatter-gather Query, a limit and a signed
// cursor.
//
//	POST /orders                          {"customer":"ada","currency":"EUR","lines":[{"sku":"tea","qty":2,"price_cents":350}]}
//	GET  /orders/{id}                     the order; its id starts with its day: 20261122-153012482917-9f3ac2e1
//	GET  /days/{day}/orders?limit=&cursor=  a page of 2026-11-22's orders in time order, and next_cursor
//	GET  /days/{day}/count                the day's order count
//
// Invalid input gets a 400 whose JSON body names every offending field; a
// missing order a 404; a cursor that was altered or issued for another day
// a 400 naming "cursor".
//
// Run it on an embedded DynamoDB Local (started and stopped by the
// program; needs Java 17, or -server dynalite with Node.js):
//
//	go run ./examples/orders
//	curl -s localhost:8080/orders -H 'Content-Type: application/json' -d '{"customer":"ada","currency":"EUR","lines":[{"sku":"tea","qty":2,"price_cents":350}]}'
//
// Against another endpoint, or real DynamoDB (credentials from
// AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/AWS_SESSION_TOKEN and AWS_REGION
// only; shared config files and profiles are not read):
//
//	go run ./examples/orders -endpoint http://127.0.0.1:8000
//	go run ./examples/orders -aws -table Orders -cursor-key $(openssl rand -hex 32)
//
// The table (partition key pk, sort key id, on-demand) is created if it
// is missing. Ctrl-C shuts down gracefully: in-flight requests finish,
// then the embedded server stops.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/dynashard/dynashard/examples/internal/backend"
	"github.com/dynashard/dynashard/examples/internal/httpjson"
	"github.com/dynashard/dynashard/examples/orders/ordersvc"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C kills at once
	}()
	if err := run(ctx, os.Args[1:], os.Stderr, nil); err != nil {
		fmt.Fprintln(os.Stderr, "orders:", err)
		os.Exit(1)
	}
}

// run serves until ctx is done. ready, if not nil, is called with the
// address once the service accepts requests.
func run(ctx context.Context, args []string, logw io.Writer, ready func(addr string)) error {
	fs := flag.NewFlagSet("orders", flag.ContinueOnError)
	fs.SetOutput(logw)
	var (
		bcfg   backend.Config
		addr   = fs.String("addr", "127.0.0.1:8080", "listen address")
		table  = fs.String("table", "Orders", "DynamoDB table (created if missing)")
		shards = fs.Int("shards", 16, "physical partition keys per day (never change it for a table that holds orders: they would not be found)")
		cache  = fs.Int("cache", 10_000, "orders kept in the read-through cache of GET /orders/{id} (0: off)")
		key    = fs.String("cursor-key", os.Getenv("ORDERS_CURSOR_KEY"),
			"hex key signing list cursors (default $ORDERS_CURSOR_KEY; empty: random, so cursors die with the process)")
	)
	bcfg.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	cursorKey, err := httpjson.CursorKey(*key)
	if err != nil {
		return err
	}
	logger := log.New(logw, "orders: ", log.LstdFlags)

	b, err := backend.Open(ctx, bcfg)
	if err != nil {
		return err
	}
	defer b.Close()
	logger.Printf("DynamoDB: %s", b.Where)
	if err := b.EnsureTable(ctx, ordersvc.TableInput(*table)); err != nil {
		return err
	}
	svc, err := ordersvc.New(b.Client, ordersvc.Config{
		Table: *table, Shards: *shards, CursorKey: cursorKey, CacheEntries: *cache, Log: logger,
	})
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	logger.Printf("listening on http://%s (table %s, %d shards per day)", l.Addr(), *table, *shards)
	if ready != nil {
		ready(l.Addr().String())
	}
	err = httpjson.Serve(ctx, l, svc.Handler(), 10*time.Second)
	logger.Printf("stopped; DynamoDB requests: %v", b.Requests.Snapshot())
	return err
}
