package chunk_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/chunk"
	"github.com/dynashard/dynashard/dynashardtest"
)

// tables starts a local DynamoDB with the public test kit and creates a
// parent table (ForumName, Subject) and a chunk table (ChunkKey) on it. It
// returns a client, the tables' names and a clean-up that deletes the
// tables and releases the server. In production the tables exist already:
// only the client and the names matter.
func tables() (c *dynamodb.Client, parents, chunks string, cleanup func()) {
	srv := newServer()
	parents, chunks = "Thread", "ThreadChunks"
	createTable(srv, parents, "ForumName", "Subject")
	createTable(srv, chunks, chunk.DefaultChunkKeyAttribute)
	c = srv.Client()
	return c, parents, chunks, func() {
		for _, t := range []string{parents, chunks} {
			c.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: &t})
		}
		srv.Close()
	}
}

// newServer starts a local DynamoDB with the public test kit.
func newServer() *dynashardtest.Server {
	srv, err := dynashardtest.NewServer()
	if err != nil {
		log.Fatal(err)
	}
	return srv
}

// createTable creates an on-demand table on srv whose key attributes, of
// type S, are keys: the partition key, then the sort key if any.
func createTable(srv *dynashardtest.Server, name string, keys ...string) {
	in := &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: types.BillingModePayPerRequest}
	for i, k := range keys {
		kind := types.KeyTypeHash
		if i > 0 {
			kind = types.KeyTypeRange
		}
		in.AttributeDefinitions = append(in.AttributeDefinitions,
			types.AttributeDefinition{AttributeName: aws.String(k), AttributeType: types.ScalarAttributeTypeS})
		in.KeySchema = append(in.KeySchema, types.KeySchemaElement{AttributeName: aws.String(k), KeyType: kind})
	}
	if err := srv.CreateTable(context.Background(), in); err != nil {
		log.Fatal(err)
	}
}

func Example() {
	c, parents, chunks, cleanup := tables()
	defer cleanup()
	ctx := context.Background()

	st, err := chunk.New(c, parents, chunks)
	if err != nil {
		log.Fatal(err)
	}
	key := chunk.Key{
		PartitionName: "ForumName", Partition: &types.AttributeValueMemberS{Value: "DynamoDB"},
		SortName: "Subject", Sort: &types.AttributeValueMemberS{Value: "Thread1"},
	}
	body := bytes.Repeat([]byte("a long reply. "), 100_000) // 1.4 MB, over the item limit

	info, err := st.Put(ctx, key, body)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("stored", info.Size, "bytes in", info.Chunks, "chunks")

	// Reads of the parent are eventually consistent unless asked otherwise,
	// here for this one call.
	got, _, err := st.Get(ctx, key, func(o *chunk.Options) { o.ConsistentRead = true })
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("read back", len(got), "bytes, equal:", bytes.Equal(got, body))
	// Output:
	// stored 1400000 bytes in 4 chunks
	// read back 1400000 bytes, equal: true
}

// A payload of unknown length is streamed in and out, compressed, with the
// caller's own attributes on the parent item.
func ExampleStore_PutReader() {
	c, parents, chunks, cleanup := tables()
	defer cleanup()
	ctx := context.Background()

	st, err := chunk.New(c, parents, chunks, func(o *chunk.Options) { o.Compression = chunk.Gzip })
	if err != nil {
		log.Fatal(err)
	}
	key := chunk.Key{
		PartitionName: "ForumName", Partition: &types.AttributeValueMemberS{Value: "DynamoDB"},
		SortName: "Subject", Sort: &types.AttributeValueMemberS{Value: "Thread2"},
	}
	type meta struct {
		Author string
		Lines  int
	}
	text := strings.Repeat("line of a very long log\n", 200_000) // 4.8 MB
	body := io.MultiReader(strings.NewReader(text))              // of unknown length
	_, err = st.PutReader(ctx, key, body,
		func(o *chunk.PutOptions) { o.Attributes = meta{Author: "ann", Lines: 200_000} })
	if err != nil {
		log.Fatal(err)
	}

	r, err := st.Open(ctx, key)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	n, err := io.Copy(io.Discard, r) // a *chunk.CorruptError instead of success if the bytes were damaged
	if err != nil {
		log.Fatal(err)
	}
	var m meta
	if err := r.Info().UnmarshalAttributes(&m); err != nil {
		log.Fatal(err)
	}
	fmt.Println("streamed", n, "bytes by", m.Author)
	fmt.Println("compressed:", r.Info().StoredSize < r.Info().Size)
	// Output:
	// streamed 4800000 bytes by ann
	// compressed: true
}

// Stat reads only the parent item.
func ExampleStore_Stat() {
	c, parents, chunks, cleanup := tables()
	defer cleanup()
	st, err := chunk.New(c, parents, chunks)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	key := chunk.Key{
		PartitionName: "ForumName", Partition: &types.AttributeValueMemberS{Value: "S3"},
		SortName: "Subject", Sort: &types.AttributeValueMemberS{Value: "Thread1"},
	}
	if _, err := st.Put(ctx, key, []byte("a short message stays inline")); err != nil {
		log.Fatal(err)
	}
	info, err := st.Stat(ctx, key)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(info.Size, "bytes,", info.Chunks, "chunks")
	// Output: 28 bytes, 0 chunks
}

// A Query that lists many parents can resolve each payload from the item
// it returned: an inline payload costs no further request, a chunked one
// only its chunks. Delete removes the parent and every chunk.
func ExampleStore_Resolve() {
	c, parents, chunks, cleanup := tables()
	defer cleanup()
	ctx := context.Background()

	st, err := chunk.New(c, parents, chunks)
	if err != nil {
		log.Fatal(err)
	}
	forum := &types.AttributeValueMemberS{Value: "DynamoDB"}
	for i, size := range []int{100, 1_000_000} {
		key := chunk.Key{PartitionName: "ForumName", Partition: forum,
			SortName: "Subject", Sort: &types.AttributeValueMemberS{Value: fmt.Sprintf("Thread%d", i)}}
		if _, err := st.Put(ctx, key, bytes.Repeat([]byte("r"), size)); err != nil {
			log.Fatal(err)
		}
	}

	out, err := c.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(parents),
		KeyConditionExpression:    aws.String("ForumName = :f"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":f": forum},
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, item := range out.Items {
		key := chunk.Key{PartitionName: "ForumName", Partition: forum, SortName: "Subject", Sort: item["Subject"]}
		data, info, err := st.Resolve(ctx, key, item)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(item["Subject"].(*types.AttributeValueMemberS).Value, len(data), "bytes in", info.Chunks, "chunks")
		if err := st.Delete(ctx, key); err != nil {
			log.Fatal(err)
		}
		if _, err := st.Stat(ctx, key, func(o *chunk.Options) { o.ConsistentRead = true }); errors.Is(err, chunk.ErrNotFound) {
			fmt.Println("  deleted")
		}
	}
	// Output:
	// Thread0 100 bytes in 0 chunks
	//   deleted
	// Thread1 1000000 bytes in 3 chunks
	//   deleted
}
