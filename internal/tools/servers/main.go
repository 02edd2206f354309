// Command servers installs the local DynamoDB-compatible servers the tests
// use (DynamoDB Local and dynalite) into the cache, so that `make test`
// shows the one-time download as its own step. Tests install on demand too.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/dynashard/dynashard/internal/localddb"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	p, err := localddb.Install(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("servers ready:\n  DynamoDB Local: %s\n  dynalite:       %s\n", p.DynamoDBLocal, p.Dynalite)
}
