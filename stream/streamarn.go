package stream

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/errs"
)

// StreamARN returns the ARN of table's latest stream, for NewPoller, from
// one DescribeTable through c (a *dynamodb.Client). A disabled stream's
// ARN is returned too: its records stay readable for 24 hours.
//
// It fails with ErrNoStreams, naming the table, if the table never had a
// stream (dynalite's tables never do), with ErrNotFound if there is no
// such table, and with ErrInvalid for a nil client or an empty name.
func StreamARN(ctx context.Context, c dynamodb.DescribeTableAPIClient, table string) (string, error) {
	switch {
	case errs.IsNil(c):
		return "", fmt.Errorf("stream: StreamARN: nil client: %w", ErrInvalid)
	case table == "":
		return "", fmt.Errorf("stream: StreamARN: empty table name: %w", ErrInvalid)
	}
	out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	var nf *ddbtypes.ResourceNotFoundException
	switch {
	case errors.As(err, &nf):
		return "", fmt.Errorf("stream: table %s: %w: %w", table, ErrNotFound, err)
	case err != nil:
		return "", fmt.Errorf("stream: table %s: %w", table, err)
	case out.Table == nil || aws.ToString(out.Table.LatestStreamArn) == "":
		return "", fmt.Errorf("stream: table %s has no stream: enable one with a StreamSpecification (UpdateTable), on a server with streams: %w", table, ErrNoStreams)
	}
	return *out.Table.LatestStreamArn, nil
}

// checkARN checks the shape of a stream ARN, such as
// arn:aws:dynamodb:us-east-1:123456789012:table/orders/stream/2026-11-27T21:15:28.112.
func checkARN(arn string) error {
	if len(arn) < 37 || len(arn) > 1024 || !strings.HasPrefix(arn, "arn:") ||
		!strings.Contains(arn, ":table/") || !strings.Contains(arn, "/stream/") {
		return fmt.Errorf("stream ARN %.80q: want arn:…:table/<table>/stream/<label> (StreamARN finds it from a table name)", arn)
	}
	return nil
}
