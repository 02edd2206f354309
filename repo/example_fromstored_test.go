package repo_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynashard/dynashard/chunk"
	"github.com/dynashard/dynashard/dynashardtest"
	"github.com/dynashard/dynashard/repo"
	"github.com/dynashard/dynashard/shard"
)

// An item as the table stores it (from a Scan here; a stream record's
// new image, through package stream, is the same) becomes the repo's
// value, its large body read from its chunks.
func ExampleRepo_FromStored() {
	ctx := context.Background()
	srv, err := dynashardtest.NewServer()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	c := srv.Client()
	layout := shard.Layout{Table: dynashardtest.TableName("docs"), PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(4)}
	in, err := layout.CreateTableInput()
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.CreateTable(ctx, in); err != nil {
		log.Fatal(err)
	}
	store, err := chunk.New(c, layout.Table, dynashardtest.TableName("docchunks"))
	if err != nil {
		log.Fatal(err)
	}
	cin, err := store.ChunkTableInput()
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.CreateTable(ctx, cin); err != nil {
		log.Fatal(err)
	}
	type Doc struct {
		ID   string `dynamodbav:"sk"`
		Body string `dynamodbav:"body"`
	}
	docs, err := repo.New[Doc](c, layout, func(o *repo.Options) { o.Large = &repo.LargeField{Attribute: "body", Store: store} })
	if err != nil {
		log.Fatal(err)
	}
	if _, err := docs.Put(ctx, "manuals", Doc{ID: "m1", Body: strings.Repeat("page ", 200_000)}); err != nil {
		log.Fatal(err)
	}
	out, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(layout.Table)})
	if err != nil {
		log.Fatal(err)
	}
	for _, item := range out.Items {
		if shard.IsRecord(item) {
			continue
		}
		d, err := docs.FromStored(ctx, item)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(d.ID, len(d.Body), "bytes")
	}
	// Output:
	// m1 1000000 bytes
}
