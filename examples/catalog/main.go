// Command catalog is the DynamoDB developer guide's product catalog as an
// HTTP JSON service over package split: one product over three tables
// sharing its Id, one per access pattern (ProductCatalog for every page
// view, ProductAvailability for every sale, ExtendedProductCatalog for the
// detail page), each call reading or writing only the parts it needs.
//
//	GET    /products/{id}               the product page: title and description
//	GET    /products/{id}/details       the detail page: also rating and track listing
//	GET    /products/{id}/availability  price and stock
//	POST   /products/{id}/checkout      {"quantity":1,"price":"$125.00 USD"}
//	PUT    /products/{id}/price         {"price":"$119.00 USD"}
//	POST   /products                    {"id":7,"title":"…","description":"…","price":"…","quantity_on_hand":10}
//	DELETE /products/{id}
//
// Every response carries "consumed_capacity": the capacity units DynamoDB
// reported for the call, by table. A checkout whose price has changed or
// whose stock is short gets a 409 and writes nothing; the stock never goes
// negative.
//
// The examples are a Go module of their own; run them from examples/. By
// default the program starts an embedded DynamoDB Local through the test
// kit dynashardtest (and stops it on exit; needs Java 17), or dynalite
// with -server dynalite (needs Node.js 20, and has no transactions:
// creating and deleting products then answer 501, and the guide's sample
// products cannot be created):
//
//	cd examples && go run ./catalog
//	curl -s localhost:8082/products/302
//	curl -s localhost:8082/products/302/checkout -H 'Content-Type: application/json' -d '{"quantity":1,"price":"$125.00 USD"}'
//
// Against a server someone else runs (region $AWS_REGION, credentials
// from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY when set, dummy ones
// otherwise), or real DynamoDB with the AWS SDK's default configuration
// chain (environment, AWS_PROFILE and the shared config files, IAM
// Identity Center (SSO) after aws sso login, assumed and instance roles):
//
//	go run ./catalog -endpoint http://127.0.0.1:8000
//	AWS_PROFILE=dev go run ./catalog -aws -table-prefix dev-
//
// The three tables (with -table-prefix in front) are created from their
// description (catalogsvc.Tables.Layout) if missing, and the guide's
// sample products (Ids 21, 302 and 58) are created unless -seed=false.
// Ctrl-C shuts down gracefully.
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

	"github.com/dynashard/dynashard/examples/catalog/catalogsvc"
	"github.com/dynashard/dynashard/examples/internal/backend"
	"github.com/dynashard/dynashard/examples/internal/httpjson"
	"github.com/dynashard/dynashard/split"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C kills at once
	}()
	if err := run(ctx, os.Args[1:], os.Stderr, nil); err != nil {
		fmt.Fprintln(os.Stderr, "catalog:", err)
		os.Exit(1)
	}
}

// run serves until ctx is done. ready, if not nil, is called with the
// address once the service accepts requests.
func run(ctx context.Context, args []string, logw io.Writer, ready func(addr string)) (err error) {
	fs := flag.NewFlagSet("catalog", flag.ContinueOnError)
	fs.SetOutput(logw)
	var (
		bcfg   backend.Config
		addr   = fs.String("addr", "127.0.0.1:8082", "listen address")
		prefix = fs.String("table-prefix", "", "prefix of the table names ProductCatalog, ProductAvailability and ExtendedProductCatalog (created if missing)")
		seed   = fs.Bool("seed", true, "create the guide's sample products 21, 302 and 58 if missing")
	)
	bcfg.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	tables := catalogsvc.TablesWithPrefix(*prefix)
	inputs, err := tables.Layout().CreateTableInputs() // checks the names before anything starts
	if err != nil {
		return err
	}
	logger := log.New(logw, "catalog: ", log.LstdFlags)

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
	svc, err := catalogsvc.New(b.Client, tables, logger)
	if err != nil {
		return err
	}
	if *seed {
		n, err := svc.Seed(ctx)
		switch {
		case errors.Is(err, split.ErrNoTransactions):
			logger.Printf("sample products not created: %v", err)
		case err != nil:
			return err
		default:
			logger.Printf("sample products: %d created", n)
		}
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
