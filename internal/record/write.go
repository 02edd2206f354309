package record

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/backoff"
	"github.com/dynashard/dynashard/internal/errs"
	"github.com/dynashard/dynashard/internal/observe"
)

// Updater is what changing a base's record needs.
type Updater interface {
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

// Write writes a new record for base with the history [n], d's
// HistoryTTL and its fence, with a conditional put: if another writer
// recorded the base first, it returns the SDK's
// *types.ConditionalCheckFailedException unwrapped, and the caller reads
// the record that writer wrote.
func (d Layout) Write(ctx context.Context, c Writer, base string, n int) error {
	item, err := d.Key(base)
	if err != nil {
		return err
	}
	now := &types.AttributeValueMemberS{Value: time.Now().UTC().Format(time.RFC3339)}
	item[attrLayout] = &types.AttributeValueMemberS{Value: recordVersion + d.Shape}
	item[attrShards] = shardList([]int{n})
	item[attrRev] = &types.AttributeValueMemberN{Value: "1"}
	item[attrCreated], item[attrChanged] = now, now
	item[attrTTL], item[attrWait] = millis(d.TTL), millis(Fence(d.TTL))
	_, err = observe.Do(ctx, c.PutItem, &dynamodb.PutItemInput{
		TableName: aws.String(d.Table), Item: item,
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": d.PartitionKey},
	})
	if err != nil {
		if condFailed(err) {
			return err
		}
		return fmt.Errorf("shard: write layout record of table %s base %q: %w", d.Table, clip(base), err)
	}
	return nil
}

// condFailed reports whether err is a failed condition of DynamoDB's.
func condFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

// SetHistory replaces the record's history with next's if its revision
// is still rev, and its HistoryTTL and fence with next's if next has
// them. It refuses, before any request, a revision at its bound. A
// revision that changed is the SDK's
// *types.ConditionalCheckFailedException, unwrapped.
func (d Layout) SetHistory(ctx context.Context, c Updater, base string, rev int, next View) error {
	key, err := d.Key(base)
	if err != nil {
		return err
	}
	if rev+1 >= maxRev {
		return fmt.Errorf("%w: table %s base %q: revision %d cannot grow past %d", errs.MalformedRecord, d.Table, clip(base), rev, maxRev-1)
	}
	cond := "attribute_exists(#l) AND #r = :rev"
	if rev == 0 { // a record written before revisions existed
		cond = "attribute_exists(#l) AND attribute_not_exists(#r)"
	}
	update := "SET #s = :h, #r = :next, #c = :now, #p = :p"
	names := map[string]string{"#s": attrShards, "#r": attrRev, "#c": attrChanged, "#l": attrLayout, "#p": attrPending}
	values := map[string]types.AttributeValue{
		":h":    shardList(next.Shards),
		":next": &types.AttributeValueMemberN{Value: strconv.Itoa(rev + 1)},
		":now":  &types.AttributeValueMemberS{Value: time.Now().UTC().Format(time.RFC3339)},
		":p":    &types.AttributeValueMemberBOOL{Value: next.Pending},
	}
	if rev != 0 {
		values[":rev"] = &types.AttributeValueMemberN{Value: strconv.Itoa(rev)}
	}
	if next.Recorded {
		update += ", #t = :t, #f = :f"
		names["#t"], names["#f"] = attrTTL, attrWait
		values[":t"], values[":f"] = millis(next.TTL), millis(next.Wait)
	}
	in := &dynamodb.UpdateItemInput{
		TableName:                 aws.String(d.Table),
		Key:                       key,
		UpdateExpression:          aws.String(update),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	}
	// A Rebalance's move checks the record in a transaction, and DynamoDB
	// refuses a write of an item a transaction holds with a
	// TransactionConflictException, which the SDK does not retry: the
	// move is short, so try again a few times.
	for wait := 10 * time.Millisecond; ; wait *= 2 {
		_, err = observe.Do(ctx, c.UpdateItem, in)
		var tce *types.TransactionConflictException
		if !errors.As(err, &tce) || wait > 640*time.Millisecond {
			break
		}
		if !backoff.Sleep(ctx, nil, wait) {
			return ctx.Err()
		}
	}
	if err != nil && !condFailed(err) {
		return fmt.Errorf("shard: update layout record of table %s base %q: %w", d.Table, clip(base), err)
	}
	return err
}

// RevisionCheck is a transaction's check that base's record is still at
// revision rev.
func (d Layout) RevisionCheck(base string, rev int) (types.TransactWriteItem, error) {
	key, err := d.Key(base)
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	check := &types.ConditionCheck{TableName: aws.String(d.Table), Key: key,
		ConditionExpression:       aws.String("#r = :rev"),
		ExpressionAttributeNames:  map[string]string{"#r": attrRev},
		ExpressionAttributeValues: map[string]types.AttributeValue{":rev": &types.AttributeValueMemberN{Value: strconv.Itoa(rev)}},
	}
	if rev == 0 { // a record written before revisions existed
		check.ConditionExpression = aws.String("attribute_exists(#l) AND attribute_not_exists(#r)")
		check.ExpressionAttributeNames = map[string]string{"#r": attrRev, "#l": attrLayout}
		check.ExpressionAttributeValues = nil
	}
	return types.TransactWriteItem{ConditionCheck: check}, nil
}

// RevisionGet is a transaction's read of base's record's revision: a
// server without transactions refuses it, which probes the server before
// anything is written.
func (d Layout) RevisionGet(base string) (types.TransactGetItem, error) {
	key, err := d.Key(base)
	if err != nil {
		return types.TransactGetItem{}, err
	}
	return types.TransactGetItem{Get: &types.Get{TableName: aws.String(d.Table), Key: key, ProjectionExpression: aws.String("#r"),
		ExpressionAttributeNames: map[string]string{"#r": attrRev}}}, nil
}
