package stream

import (
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// listing is one DescribeStream answer, every page of it.
type listing struct {
	status types.StreamStatus
	shards []types.Shard // in the order listed, each ID once
}

// describe lists the stream's shards, following DescribeStream's pages.
func (p *Poller) describe(ctx context.Context) (listing, error) {
	var l listing
	seen := map[string]bool{}
	in := &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(p.arn)}
	for {
		out, err := retrying(ctx, p, func() (*dynamodbstreams.DescribeStreamOutput, error) {
			return p.c.DescribeStream(ctx, in)
		})
		if err != nil {
			return listing{}, p.describeError(err)
		}
		d := out.StreamDescription
		if d == nil {
			return listing{}, fmt.Errorf("stream: DescribeStream %s: no stream description in the answer", p.arn)
		}
		l.status = d.StreamStatus
		for _, sh := range d.Shards {
			if id := aws.ToString(sh.ShardId); id != "" && !seen[id] {
				seen[id] = true
				l.shards = append(l.shards, sh)
			}
		}
		if d.LastEvaluatedShardId == nil {
			return l, nil
		}
		in.ExclusiveStartShardId = d.LastEvaluatedShardId
	}
}

// ready returns the IDs of the shards that may be read now, in ID order:
// those not finished whose parent is finished or not listed (trimmed).
// Reading a shard only once its parent is finished keeps each item's
// changes in order across a shard split.
func ready(shards []types.Shard, cp Checkpoint) []string {
	listed := make(map[string]bool, len(shards))
	for _, sh := range shards {
		listed[aws.ToString(sh.ShardId)] = true
	}
	var ids []string
	for _, sh := range shards {
		id, parent := aws.ToString(sh.ShardId), aws.ToString(sh.ParentShardId)
		if cp.position(id).Finished {
			continue
		}
		if parent == "" || parent == id || !listed[parent] || cp.position(parent).Finished {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// unlisted returns the checkpoint's shards that the listing lacks, split
// into finished ones (their records are read; DynamoDB trimmed the shard)
// and unfinished ones (records after the checkpoint were trimmed), each in
// ID order.
func unlisted(shards []types.Shard, cp Checkpoint) (finished, unfinished []string) {
	listed := make(map[string]bool, len(shards))
	for _, sh := range shards {
		listed[aws.ToString(sh.ShardId)] = true
	}
	for id, pos := range cp.Shards() {
		switch {
		case listed[id]:
		case pos.Finished:
			finished = append(finished, id)
		default:
			unfinished = append(unfinished, id)
		}
	}
	return finished, unfinished
}

// allFinished reports whether every listed shard is finished in cp.
func allFinished(shards []types.Shard, cp Checkpoint) bool {
	for _, sh := range shards {
		if !cp.position(aws.ToString(sh.ShardId)).Finished {
			return false
		}
	}
	return true
}
