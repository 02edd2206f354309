package scatter_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/smithy-go"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/scatter"
	"github.com/dynashard/dynashard/shard"
)

// narrowClient has exactly scatter.Client's methods: no DescribeTable.
type narrowClient struct{ scatter.Client }

// TestKeyNamesNeedDescribeTable: a Layout whose sort-key name is not the
// table's is a *shard.LayoutError naming it through *dynamodb.Client,
// and, as scatter.Client's doc says, the SDK's ValidationException
// through a client with only scatter.Client's methods.
func TestKeyNamesNeedDescribeTable(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		name := s.Table(t, "pk:S", "sk:S")
		l := shard.Layout{Table: name, PartitionKey: "pk", SortKey: "tag", Strategy: shard.Hash(4)}
		full := newScatter(t, s.Client(), l)
		_, err := full.Count(ctx, "day")
		var le *shard.LayoutError
		if !errors.As(err, &le) || len(le.Keys) != 1 {
			t.Errorf("through *dynamodb.Client: %v, want a *shard.LayoutError naming the sort key", err)
		}
		narrow := newScatter(t, narrowClient{s.Client()}, l)
		_, err = narrow.Count(ctx, "day")
		var ae smithy.APIError
		if !errors.As(err, &ae) || ae.ErrorCode() != "ValidationException" || errors.As(err, &le) {
			t.Errorf("through scatter.Client's methods only: %v, want the SDK's ValidationException", err)
		}
	})
}
