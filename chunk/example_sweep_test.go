package chunk_test

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/chunk"
)

// Sweep deletes the chunks no parent holds once they are older than Grace:
// here the first version of a payload, which RetainOld kept for readers
// that were still streaming it when the second Put replaced it. In
// production Grace stays long (an hour by default) and Sweep runs from a
// periodic job.
func ExampleStore_Sweep() {
	c, parents, chunks, cleanup := tables()
	defer cleanup()
	ctx := context.Background()

	st, err := chunk.New(c, parents, chunks, func(o *chunk.Options) {
		o.RetainOld = true
		o.Grace = 20 * time.Second // short for the example only: a Put must finish within Grace/2
	})
	if err != nil {
		log.Fatal(err)
	}
	key := chunk.Key{
		PartitionName: "ForumName", Partition: &types.AttributeValueMemberS{Value: "DynamoDB"},
		SortName: "Subject", Sort: &types.AttributeValueMemberS{Value: "Thread1"},
	}
	for _, v := range []string{"v1. ", "v2. "} {
		if _, err := st.Put(ctx, key, bytes.Repeat([]byte(v), 350_000)); err != nil { // 1.4 MB: 4 chunks
			log.Fatal(err)
		}
	}
	stats, err := st.Sweep(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("at once: deleted", stats.Deleted, "young", stats.Young)

	time.Sleep(21 * time.Second) // past Grace
	stats, err = st.Sweep(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("past Grace: deleted", stats.Deleted, "current", stats.Current)
	got, _, err := st.Get(ctx, key, func(o *chunk.Options) { o.ConsistentRead = true })
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("the current version reads back:", bytes.HasPrefix(got, []byte("v2")))
	// Output:
	// at once: deleted 0 young 8
	// past Grace: deleted 4 current 4
	// the current version reads back: true
}
