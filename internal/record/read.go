package record

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/dynashard/dynashard/internal/errs"
	"github.com/dynashard/dynashard/internal/observe"
)

// Reader is what a read of a base's record needs. A client that also
// has DescribeTable (as *dynamodb.Client does) gets a *shard.LayoutError
// naming the key attributes when the Layout's key attributes are not the
// table's: DynamoDB refuses the record read with a ValidationException,
// and one DescribeTable then says which key differs. Without
// DescribeTable (or the permission for it) that case is the SDK's error,
// wrapped.
type Reader interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// tableDescriber is the optional part of a Reader that explains a
// refused record read.
type tableDescriber interface {
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// Writer is what writing a base's record needs.
type Writer interface {
	Reader
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
}

var _ Writer = (*dynamodb.Client)(nil)

// Read reads base's record with a consistent GetItem; ok is false if the
// base has none. The request counts in ctx's call, and in the
// layout-record-read metric of its Scope.
func (d Layout) Read(ctx context.Context, c Reader, base string) (_ Record, ok bool, _ error) {
	key, err := d.Key(base)
	if err != nil {
		return Record{}, false, err
	}
	at := time.Now()
	observe.ScopeOf(ctx).RecordRead(ctx, d.Table)
	out, err := observe.Do(ctx, c.GetItem, &dynamodb.GetItemInput{
		TableName: aws.String(d.Table), Key: key, ConsistentRead: aws.Bool(true),
		ProjectionExpression: aws.String("#l, #s, #r, #p, #t, #f"),
		ExpressionAttributeNames: map[string]string{"#l": attrLayout, "#s": attrShards, "#r": attrRev, "#p": attrPending,
			"#t": attrTTL, "#f": attrWait},
	})
	if err != nil {
		if le := d.keyMismatch(ctx, c, base, err); le != nil {
			return Record{}, false, le
		}
		return Record{}, false, fmt.Errorf("shard: read layout record of table %s base %q: %w", d.Table, clip(base), err)
	}
	if out.Item == nil {
		return Record{}, false, nil
	}
	got := time.Now()
	rec, err := Parse(out.Item)
	if err != nil {
		return Record{}, false, fmt.Errorf("shard: table %s base %q: %w", d.Table, clip(base), err)
	}
	rec.At, rec.Got = at, got
	return rec, true, nil
}

// keyMismatch explains a record read that DynamoDB refused as invalid
// (err): if the table's key schema is not d's, it returns a
// *shard.LayoutError naming each differing key attribute; otherwise nil,
// and the caller keeps err.
//
// Why DescribeTable, and only after a refusal, rather than recognising
// the refusal's text: the servers word it differently (DynamoDB and
// dynalite: "The provided key element does not match the schema";
// DynamoDB Local: "One of the required keys was not given a value", "The
// number of conditions on the keys is invalid", "Type mismatch for
// key"), the same ValidationException covers other bad input (a table
// name DynamoDB refuses), and no text says which attribute is wrong. The
// table's description does, and asking for it only on this failure costs
// nothing on the path that works. It is not a data request.
func (d Layout) keyMismatch(ctx context.Context, c Reader, base string, err error) error {
	var ae smithy.APIError
	dc, ok := c.(tableDescriber)
	if !ok || !errors.As(err, &ae) || ae.ErrorCode() != "ValidationException" {
		return nil
	}
	out, derr := observe.Do(ctx, dc.DescribeTable, &dynamodb.DescribeTableInput{TableName: aws.String(d.Table)})
	if derr != nil || out == nil || out.Table == nil {
		return nil
	}
	t := tableKeyOf(out.Table)
	diffs := t.diffs(d)
	if len(diffs) == 0 {
		return nil
	}
	return d.mismatchErr(base, d.Table+": "+t.String(), diffs)
}

// mismatchErr is the error for a layout that differs from the record
// stored, or from the table's key schema (keys set).
func (d Layout) mismatchErr(base, stored string, keys []string) error {
	if d.mismatch != nil {
		return d.mismatch(base, d.Want, stored, keys)
	}
	return fmt.Errorf("%w for base %q: this code uses %s; the table has %s", errs.LayoutMismatch, clip(base), d.Want, stored)
}

// tableKey is a table's key schema as DescribeTable gives it.
type tableKey struct {
	pk, sk         string
	pkType, skType types.ScalarAttributeType
}

func tableKeyOf(d *types.TableDescription) tableKey {
	var k tableKey
	for _, e := range d.KeySchema {
		switch e.KeyType {
		case types.KeyTypeHash:
			k.pk = aws.ToString(e.AttributeName)
		case types.KeyTypeRange:
			k.sk = aws.ToString(e.AttributeName)
		}
	}
	for _, a := range d.AttributeDefinitions {
		switch aws.ToString(a.AttributeName) {
		case k.pk:
			k.pkType = a.AttributeType
		case k.sk:
			k.skType = a.AttributeType
		}
	}
	return k
}

// partition and sort are the key's parts in shard.Layout.String's
// notation; a partition key of a type other than S shows it.
func (k tableKey) partition() string {
	s := "pk=" + clipTo(k.pk, maxQuoted)
	if k.pkType != types.ScalarAttributeTypeS {
		s += ":" + clipTo(string(k.pkType), maxQuoted)
	}
	return s
}

func (k tableKey) sort() string {
	return "sk=" + clipTo(k.sk, maxQuoted) + ":" + clipTo(string(k.skType), maxQuoted)
}

func (k tableKey) String() string {
	if k.sk == "" {
		return k.partition()
	}
	return k.partition() + " " + k.sort()
}

// diffs lists each key attribute on which d differs from k.
func (k tableKey) diffs(d Layout) []string {
	var diff []string
	if k.pk != d.PartitionKey || k.pkType != types.ScalarAttributeTypeS {
		diff = append(diff, fmt.Sprintf("pk=%s, the table's %s", d.PartitionKey, k.partition()))
	}
	mine := fmt.Sprintf("sk=%s:%s", d.SortKey, d.SortType)
	switch {
	case d.SortKey == "" && k.sk == "":
	case d.SortKey == "":
		diff = append(diff, "no sk, the table's "+k.sort())
	case k.sk == "":
		diff = append(diff, mine+", the table has no sort key")
	case k.sk != d.SortKey || k.skType != d.SortType:
		diff = append(diff, mine+", the table's "+k.sort())
	}
	return diff
}
