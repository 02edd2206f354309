package chunk_test

import (
	"context"
	"fmt"
	"log"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/chunk"
)

// ExampleStore_ChunkTableInput creates both tables of a Store from the
// inputs it describes: the chunk table's key from Options, the parent
// table's from a key of its items.
func ExampleStore_ChunkTableInput() {
	ctx := context.Background()
	srv := newServer()
	defer srv.Close()
	c := srv.Client()

	st, err := chunk.New(c, "Post", "PostChunks")
	if err != nil {
		log.Fatal(err)
	}
	key := chunk.Key{
		PartitionName: "ForumName", Partition: &types.AttributeValueMemberS{Value: "DynamoDB"},
		SortName: "Posted", Sort: &types.AttributeValueMemberN{Value: "1700000000"},
	}
	parents, err := st.ParentTableInput(key)
	if err != nil {
		log.Fatal(err)
	}
	chunks, err := st.ChunkTableInput()
	if err != nil {
		log.Fatal(err)
	}
	for _, in := range []*dynamodb.CreateTableInput{parents, chunks} {
		if err := srv.CreateTable(ctx, in); err != nil {
			log.Fatal(err)
		}
		defer c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: in.TableName})
		fmt.Printf("%s:", aws.ToString(in.TableName))
		for i, k := range in.KeySchema {
			fmt.Printf(" %s %s (%s)", k.KeyType, aws.ToString(k.AttributeName), in.AttributeDefinitions[i].AttributeType)
		}
		fmt.Println()
	}

	if _, err := st.Put(ctx, key, []byte("a post")); err != nil {
		log.Fatal(err)
	}
	got, _, err := st.Get(ctx, key)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s\n", got)
	// Output:
	// Post: HASH ForumName (S) RANGE Posted (N)
	// PostChunks: HASH ChunkKey (S)
	// a post
}
