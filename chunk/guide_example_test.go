package chunk_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/chunk"
)

// A table already in the guide's own layout, as its example shows it,
// read and written as it is, then moved to the checksummed layout.
func ExampleGuideLayout() {
	ctx := context.Background()
	srv := newServer()
	defer srv.Close()
	c := srv.Client()
	createTable(srv, "Reply", "Id", "ReplyDateTime")
	createTable(srv, "ReplyChunks", "Id")
	defer func() {
		for _, t := range []string{"Reply", "ReplyChunks"} {
			c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(t)})
		}
	}()
	put := func(table string, item map[string]types.AttributeValue) {
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			log.Fatal(err)
		}
	}
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

	// Written by other code, exactly as in the guide.
	put("Reply", map[string]types.AttributeValue{"Id": s("DynamoDB#Thread1"), "ReplyDateTime": s("2012-03-15T20:42:54.023Z"),
		"ChunkCount": n("3"), "ChunkVersion": n("1")})
	for i, part := range []string{"first part of long message text...", "...second part of long message text...", "...third part of long message text"} {
		put("ReplyChunks", map[string]types.AttributeValue{
			"Id": s(fmt.Sprintf("DynamoDB#Thread1#2012-03-15T20:42:54.023Z#1#%d", i+1)), "Message": s(part)})
	}

	st, err := chunk.New(c, "Reply", "ReplyChunks", chunk.GuideLayout)
	if err != nil {
		log.Fatal(err)
	}
	key := chunk.Key{
		PartitionName: "Id", Partition: s("DynamoDB#Thread1"),
		SortName: "ReplyDateTime", Sort: s("2012-03-15T20:42:54.023Z"),
	}
	text, info, err := st.Get(ctx, key)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s\nversion %s, %d chunks, checksum recorded: %v\n", text, info.Version, info.Chunks, !info.NoChecksum)

	// Written back in the same layout: version 2, readable by the code
	// that wrote version 1.
	info, err = st.Put(ctx, key, []byte(strings.Repeat("a longer reply. ", 50_000)))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("version %s, %d chunks\n", info.Version, info.Chunks)

	// The way to the checksummed layout: once every reader has
	// Options.Guide set (it reads both layouts), writers drop Guide.Write;
	// each of their Puts stores the checksummed layout, and Migrate moves
	// one item that nobody rewrites.
	ours, err := chunk.New(c, "Reply", "ReplyChunks", func(o *chunk.Options) {
		o.ChunkKeyAttribute = chunk.GuideChunkKeyAttribute
		o.Guide = &chunk.Guide{} // read the guide's layout, write ours
	})
	if err != nil {
		log.Fatal(err)
	}
	info, err = ours.Migrate(ctx, key)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("guide layout: %v, checksum recorded: %v\n", info.Guide, !info.NoChecksum)
	text, _, err = st.Get(ctx, key) // a reader of the guide's layout reads it too
	fmt.Println(len(text), err)
	// Output:
	// first part of long message text......second part of long message text......third part of long message text
	// version 1, 3 chunks, checksum recorded: false
	// version 2, 3 chunks
	// guide layout: false, checksum recorded: true
	// 800000 <nil>
}
