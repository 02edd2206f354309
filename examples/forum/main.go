// Command forum is the DynamoDB developer guide's forum as an HTTP JSON
// service over dynashard: threads and replies in sharded repository
// tables, and replies of any length (the guide's virtual items: chunks in
// a ReplyChunks table behind an atomically switched Reply item, so a
// reader never sees half a reply).
//
//	POST /forums/{forum}/threads                    {"subject":"…","author":"…","message":"…"}
//	GET  /forums/{forum}/threads?limit=&cursor=     threads, oldest first, and next_cursor
//	GET  /forums/{forum}/threads/{thread}           a thread and its reply count
//	POST /forums/{forum}/threads/{thread}/replies   {"author":"…","message":"… up to 8 MiB …"}
//	GET  /forums/{forum}/threads/{thread}/replies?limit=&cursor=  replies with previews
//	GET  /forums/{forum}/threads/{thread}/replies/{reply}  one reply, whole
//
// The examples are a Go module of their own; run them from examples/. By
// default the program starts an embedded DynamoDB Local through the test
// kit dynashardtest (and stops it on exit; needs Java 17), or dynalite
// with -server dynalite (needs Node.js 20):
//
//	cd examples && go run ./forum
//	curl -s localhost:8081/forums/dynamodb/threads -H 'Content-Type: application/json' -d '{"subject":"Sharding","author":"ada","message":"How many shards?"}'
//
// Against a server someone else runs (region $AWS_REGION, credentials
// from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY when set, dummy ones
// otherwise), or real DynamoDB with the AWS SDK's default configuration
// chain (environment, AWS_PROFILE and the shared config files, IAM
// Identity Center (SSO) after aws sso login, assumed and instance roles):
//
//	go run ./forum -endpoint http://127.0.0.1:8000
//	AWS_PROFILE=dev go run ./forum -aws -cursor-key $(openssl rand -hex 32)
//
// The tables Thread, Reply and ReplyChunks (with -table-prefix in front)
// are created from their descriptions (forumsvc.Tables.Layouts and
// Inputs) if missing. Ctrl-C shuts down gracefully.
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

	"github.com/dynashard/dynashard/examples/forum/forumsvc"
	"github.com/dynashard/dynashard/examples/internal/backend"
	"github.com/dynashard/dynashard/examples/internal/httpjson"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C kills at once
	}()
	if err := run(ctx, os.Args[1:], os.Stderr, nil); err != nil {
		fmt.Fprintln(os.Stderr, "forum:", err)
		os.Exit(1)
	}
}

// run serves until ctx is done. ready, if not nil, is called with the
// address once the service accepts requests.
func run(ctx context.Context, args []string, logw io.Writer, ready func(addr string)) (err error) {
	fs := flag.NewFlagSet("forum", flag.ContinueOnError)
	fs.SetOutput(logw)
	var (
		bcfg   backend.Config
		addr   = fs.String("addr", "127.0.0.1:8081", "listen address")
		prefix = fs.String("table-prefix", "", "prefix of the table names Thread, Reply and ReplyChunks (created if missing)")
		key    = fs.String("cursor-key", os.Getenv("FORUM_CURSOR_KEY"),
			"hex key signing list cursors (default $FORUM_CURSOR_KEY; empty: random, so cursors die with the process)")
	)
	bcfg.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	cursorKey, err := httpjson.CursorKey(*key)
	if err != nil {
		return err
	}
	tables := forumsvc.TablesWithPrefix(*prefix)
	inputs, err := tables.Inputs() // checks the names before anything starts
	if err != nil {
		return err
	}
	logger := log.New(logw, "forum: ", log.LstdFlags)

	b, err := backend.Open(ctx, bcfg)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, b.Close()) }()
	logger.Printf("DynamoDB: %s", b.Where)
	for _, in := range inputs {
		if err := b.EnsureTable(ctx, in); err != nil {
			return err
		}
	}
	svc, err := forumsvc.New(b.Client, tables, forumsvc.Config{CursorKey: cursorKey, Log: logger})
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	logger.Printf("listening on http://%s (tables %v)", l.Addr(), tables.Names())
	if ready != nil {
		ready(l.Addr().String())
	}
	err = httpjson.Serve(ctx, l, svc.Handler(), 10*time.Second)
	logger.Printf("stopped; DynamoDB requests: %v", b.Requests.Snapshot())
	return err
}
