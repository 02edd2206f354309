package batch_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/batch"
	"github.com/dynashard/dynashard/internal/ddbsize"
	"github.com/dynashard/dynashard/internal/ddbtest"
)

func Example() {
	ctx := context.Background()
	srv, err := ddbtest.Default()
	if err != nil {
		log.Fatal(err)
	}
	in, _ := ddbtest.TableInput("pk:S")
	table, err := srv.NewTable(ctx, in)
	if err != nil {
		log.Fatal(err)
	}
	c := srv.Client()
	defer c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	keyAttrs := func(o *batch.Options) { o.KeyAttributes = map[string][]string{table: {"pk"}} }

	var writes []batch.Write
	var keys []batch.Key
	for i := range 30 {
		pk := &types.AttributeValueMemberS{Value: fmt.Sprint("order#", i)}
		writes = append(writes, batch.Write{Table: table, Put: map[string]types.AttributeValue{
			"pk": pk, "total": &types.AttributeValueMemberN{Value: fmt.Sprint(i * 10)},
		}})
		keys = append(keys, batch.Key{Table: table, Key: map[string]types.AttributeValue{"pk": pk}})
	}
	st, err := batch.WriteAll(ctx, c, writes, keyAttrs)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("wrote %d items in %d requests\n", st.Done, st.Requests)

	items, st, err := batch.Get(ctx, c, keys, keyAttrs, func(o *batch.Options) { o.ConsistentRead = true })
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("read %d items in %d request\n", len(items), st.Requests)
	// Output:
	// wrote 30 items in 2 requests
	// read 30 items in 1 request
}

// Invalid input is refused before anything is sent, naming the entry.
func ExampleWriteAll_invalid() {
	item := func(pk string, size int) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{
			"pk":   &types.AttributeValueMemberS{Value: pk},
			"body": &types.AttributeValueMemberB{Value: make([]byte, size)},
		}
	}
	keyAttrs := func(o *batch.Options) { o.KeyAttributes = map[string][]string{"orders": {"pk"}} }
	for _, writes := range [][]batch.Write{
		{{Table: "orders", Put: item("a", 10)}, {Table: "orders", Delete: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}}}},
		{{Table: "orders", Put: item("b", ddbsize.MaxItemSize)}},
	} {
		// A nil client: nothing is sent.
		_, err := batch.WriteAll(context.Background(), nil, writes, keyAttrs)
		var ie *batch.InputError
		fmt.Println(errors.As(err, &ie), ie.Index, err)
	}
	// Output:
	// true 1 batch: duplicate key: same key as input 0 (input 1, table "orders", key pk=S:"a")
	// true 0 ddbsize: item too large: 409607 bytes, limit 409600 (input 0, table "orders", key pk=S:"b")
}
