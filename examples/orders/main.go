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
// The examples are a Go module of their own; run them from examples/. By
// default the program starts an embedded DynamoDB Local through the test
// kit dynashardtest (and stops it on exit; needs Java 17), or dynalite
// with -server dynalite (needs Node.js 20):
//
//	cd examples && go run ./orders
//	curl -s localhost:8080/orders -H 'Content-Type: application/json' -d '{"customer":"ada","currency":"EUR","lines":[{"sku":"tea","qty":2,"price_cents":350}]}'
//
// Against a server someone else runs (region $AWS_REGION, credentials
// from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY when set, dummy ones
// otherwise), or real DynamoDB with the AWS SDK's default configuration
// chain (environment, AWS_PROFILE and the shared config files, IAM
// Identity Center (SSO) after aws sso login, assumed and instance roles):
//
//	go run ./orders -endpoint http://127.0.0.1:8000
//	AWS_PROFILE=dev go run ./orders -aws -table Orders -cursor-key $(openssl rand -hex 32)
//
// The table is described once, by ordersvc.Layout (partition key pk, sort
// key id, -shards keys per day by shard.Hash), and created from it,
// on-demand, if it is missing. Ctrl-C shuts down gracefully: in-flight
// requests finish, then the embedded server stops.
package main

import (
	"context"
	"errors"
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
func run(ctx context.Context, args []string, logw io.Writer, ready func(addr string)) (err error) {
	fs := flag.NewFlagSet("orders", flag.ContinueOnError)
	fs.SetOutput(logw)
	var (
		bcfg   backend.Config
		addr   = fs.String("addr", "127.0.0.1:8080", "listen address")
		table  = fs.String("table", "Orders", "DynamoDB table (created if missing)")
		shards = fs.Int("shards", ordersvc.DefaultShards, "physical partition keys per day (recorded per day in the table: a day already written keeps its own N)")
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
	layout := ordersvc.Layout(*table, *shards)
	in, err := layout.CreateTableInput() // checks the layout before anything starts
	if err != nil {
		return err
	}
	logger := log.New(logw, "orders: ", log.LstdFlags)

	b, err := backend.Open(ctx, bcfg)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, b.Close()) }()
	logger.Printf("DynamoDB: %s", b.Where)
	if err := b.EnsureTable(ctx, in); err != nil {
		return err
	}
	svc, err := ordersvc.New(b.Client, layout, ordersvc.Config{CursorKey: cursorKey, CacheEntries: *cache, Log: logger})
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	logger.Printf("listening on http://%s (%s)", l.Addr(), layout)
	if ready != nil {
		ready(l.Addr().String())
	}
	err = httpjson.Serve(ctx, l, svc.Handler(), 10*time.Second)
	logger.Printf("stopped; DynamoDB requests: %v", b.Requests.Snapshot())
	return err
}
