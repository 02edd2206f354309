package repo_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard/chunk"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/shard"
)

// GuideReply is the guide's Reply item as a Repo reads it: the message is
// the large field, in the guide's chunk layout.
type GuideReply struct {
	Thread   string `dynamodbav:"Id"`
	At       string `dynamodbav:"ReplyDateTime"`
	PostedBy string `dynamodbav:"PostedBy"`
	Message  []byte `dynamodbav:"Message"`
}

// TestGuideLayout: replies written with raw PutItem in the guide's chunk
// layout (a chunked one: ChunkCount and ChunkVersion 1, chunks in the
// ReplyChunks table keyed Id, text in Message S; a short one inline in
// Message S) read back byte for byte through a Repo whose LargeField store
// is in the guide's layout, with Get and All. The partition key carries
// the Repo's shard suffix (".1" with shard.Hash(1)); the chunk layout is
// the guide's own.
func TestGuideLayout(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c := s.Client()
		l := shard.Layout{Table: s.Table(t, "Id:S", "ReplyDateTime:S"), PartitionKey: "Id", SortKey: "ReplyDateTime",
			Strategy: shard.Hash(1), Unchecked: true}
		chunks := s.Table(t, "Id:S")
		put := func(table string, item map[string]types.AttributeValue) {
			t.Helper()
			if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: item}); err != nil {
				t.Fatal(err)
			}
		}
		str := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
		num := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
		thread := shard.Key("DynamoDB#Thread1", 1)
		parts := []string{"first part of long message text, Grüße 世界…", "...second part of long message text...", "...third part of long message text"}
		put(l.Table, map[string]types.AttributeValue{"Id": str(thread), "ReplyDateTime": str("2012-03-15T20:42:54.023Z"),
			"PostedBy": str("User A"), "ChunkCount": num("3"), "ChunkVersion": num("1")})
		for i, p := range parts {
			put(chunks, map[string]types.AttributeValue{"Id": str(fmt.Sprintf("%s#2012-03-15T20:42:54.023Z#1#%d", thread, i+1)), "Message": str(p)})
		}
		put(l.Table, map[string]types.AttributeValue{"Id": str(thread), "ReplyDateTime": str("2012-03-21T20:41:23.192Z"),
			"PostedBy": str("User B"), "Message": str("short message")})

		st, err := chunk.New(c, l.Table, chunks, chunk.GuideLayout)
		if err != nil {
			t.Fatal(err)
		}
		r := newRepo[GuideReply](t, c, l, large("Message", st))
		want := []GuideReply{
			{Thread: thread, At: "2012-03-15T20:42:54.023Z", PostedBy: "User A", Message: []byte(strings.Join(parts, ""))},
			{Thread: thread, At: "2012-03-21T20:41:23.192Z", PostedBy: "User B", Message: []byte("short message")},
		}
		for _, w := range want {
			got, err := r.Get(ctx, "DynamoDB#Thread1", w.At)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(w, got); d != "" {
				t.Errorf("Get %s (-want +got):\n%s", w.At, d)
			}
		}
		var all []GuideReply
		for it, err := range r.All(ctx, "DynamoDB#Thread1") {
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, it)
		}
		if d := cmp.Diff(want, all); d != "" {
			t.Errorf("All (-want +got):\n%s", d)
		}
	})
}
