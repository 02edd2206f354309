// Command servers installs the local servers the tests use (DynamoDB Local
// and dynalite, and s3rver for the S3 offload of module s3blob) into the
// cache, so that `make test` shows the one-time download as its own step.
// Tests install on demand too.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/dynashard/dynashard/internal/localddb"
	"github.com/dynashard/dynashard/internal/locals3"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	p, err := localddb.Install(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	s3, err := locals3.Install(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("servers ready:\n  DynamoDB Local: %s\n  dynalite:       %s\n  s3rver:         %s\n", p.DynamoDBLocal, p.Dynalite, s3)
}
