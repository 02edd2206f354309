package dynashardtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard"
)

// pollInterval is how often CreateTable asks whether a table is ACTIVE.
const pollInterval = 50 * time.Millisecond

// CreateTable creates the table in describes and returns once it and its
// global secondary indexes are ACTIVE, asking every 50 ms (the SDK's
// TableExistsWaiter waits 20 s before its first look; local servers create
// tables at once). An input with neither BillingMode nor
// ProvisionedThroughput is billed on demand; in itself is not modified.
// Tables outlive the handle: they last until the server stops, and other
// handles of the same Kind see them, so name them with TableName.
//
// It fails with an error matching dynashard.ErrInvalid, before any
// request, for a nil ctx, a nil in or a nil TableName; with the SDK's
// error (for errors.As) if DynamoDB refuses the table; and with ctx's
// error if the table is not ACTIVE in time. Safe for concurrent use.
func (s *Server) CreateTable(ctx context.Context, in *dynamodb.CreateTableInput) error {
	if ctx == nil || in == nil || in.TableName == nil {
		return fmt.Errorf("dynashardtest: CreateTable needs a ctx, an input and a TableName: %w", dynashard.ErrInvalid)
	}
	s.clientOnce.Do(func() { s.client = s.Client() })
	name := aws.ToString(in.TableName)
	cp := *in
	if cp.BillingMode == "" && cp.ProvisionedThroughput == nil {
		cp.BillingMode = types.BillingModePayPerRequest
	}
	if _, err := s.client.CreateTable(ctx, &cp); err != nil {
		return fmt.Errorf("dynashardtest: create table %q: %w", name, err)
	}
	return waitActive(ctx, s.client, name)
}

// waitActive polls until the table and its indexes are ACTIVE. A table not
// found yet is waited for: real DynamoDB may not list a table it has just
// accepted.
func waitActive(ctx context.Context, c *dynamodb.Client, name string) error {
	for {
		out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		var nf *types.ResourceNotFoundException
		switch {
		case err != nil && ctx.Err() != nil:
			return fmt.Errorf("dynashardtest: table %q not ACTIVE: %w", name, ctx.Err())
		case err != nil && !errors.As(err, &nf):
			return fmt.Errorf("dynashardtest: describe table %q: %w", name, err)
		case err == nil && active(out.Table):
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("dynashardtest: table %q not ACTIVE: %w", name, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

func active(t *types.TableDescription) bool {
	if t == nil || t.TableStatus != types.TableStatusActive {
		return false
	}
	for _, g := range t.GlobalSecondaryIndexes {
		if g.IndexStatus != types.IndexStatusActive {
			return false
		}
	}
	return true
}

var tableSeq atomic.Uint64

// maxPrefix keeps TableName's result within DynamoDB's 255 bytes.
const maxPrefix = 200

// TableName returns a table name no other call returns, in this process or
// another: prefix, then the process ID, a counter and a random number, as
// in "orders-4242-7-9f3c01ab". Bytes of prefix that DynamoDB does not allow
// in a name (anything but letters, digits, '_', '-' and '.') become '_',
// and a prefix longer than 200 bytes is cut, so t.Name() is a fine prefix.
// Safe for concurrent use.
func TableName(prefix string) string {
	if len(prefix) > maxPrefix {
		prefix = prefix[:maxPrefix]
	}
	b := []byte(prefix)
	for i, c := range b {
		if !tableNameByte(c) {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		b = append(b, 't')
	}
	return fmt.Sprintf("%s-%d-%d-%08x", b, os.Getpid(), tableSeq.Add(1), rand.Uint32())
}

func tableNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.'
}
