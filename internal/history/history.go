// Package history lets scatter and repo read and write a base's layout
// record through package shard's cache and checks, which shard keeps out
// of its public API (a Table is the public home of the per-base
// operations): scatter reads the shard-count history with its own,
// read-only client, and repo records a base before writing a large value
// past its Table.
//
// The functions send their requests with the caller's ctx through
// internal/observe's Do, so the record reads and writes of a scatter or
// repo call count in that call's dynashard.Usage and span, and each
// record read in the layout-record-read metric of the caller's Scope.
package history

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// Reader reads a record.
type Reader interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// Writer reads and writes a record.
type Writer interface {
	Reader
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
}

// Package shard sets both at init; layout is a shard.Layout.
var (
	// Shards is shard.Table.Shards for the layout, through c. due reports
	// that the history came from a cache entry past half the layout's
	// HistoryTTL: the caller may then Refresh it beside its own requests,
	// so that a base read at least that often never waits for its record.
	Shards func(ctx context.Context, c Reader, layout any, base string) (h []int, due bool, err error)
	// Refresh reads base's record again into the cache.
	Refresh func(ctx context.Context, c Reader, layout any, base string) error
	// Record checks layout against base's record, writing the record if
	// the base has none, as a Table's first write does.
	Record func(ctx context.Context, c Writer, layout any, base string) error
)
