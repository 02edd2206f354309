package stream_test

import (
	"context"
	"fmt"
	"log"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/dynashard/dynashard/dynashardtest"
	"github.com/dynashard/dynashard/shard"
	"github.com/dynashard/dynashard/stream"
)

// A consumer of a sharded table's stream: each record becomes a change of
// a logical item (base, id), decided with the item's State, which the
// consumer keeps beside its copy of the item.
func ExampleDecoder_Apply() {
	ctx := context.Background()
	srv, err := dynashardtest.NewServer()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	c := srv.Client()
	type Order struct {
		ID    string `dynamodbav:"sk"`
		Total int
	}
	layout := shard.Layout{Table: dynashardtest.TableName("orders"), PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(4)}
	in, err := layout.CreateTableInput()
	if err != nil {
		log.Fatal(err)
	}
	in.StreamSpecification = &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages}
	if err := srv.CreateTable(ctx, in); err != nil {
		log.Fatal(err)
	}
	orders, err := shard.NewTable[Order](c, layout)
	if err != nil {
		log.Fatal(err)
	}
	for _, o := range []Order{{ID: "o1", Total: 10}, {ID: "o1", Total: 12}} {
		if err := orders.Put(ctx, "2026-11-27", o); err != nil {
			log.Fatal(err)
		}
	}
	if err := orders.Delete(ctx, "2026-11-27", "o1"); err != nil {
		log.Fatal(err)
	}

	arn, err := stream.StreamARN(ctx, c, layout.Table)
	if err != nil {
		log.Fatal(err)
	}
	o := c.Options()
	sc := dynamodbstreams.New(dynamodbstreams.Options{Region: o.Region, BaseEndpoint: o.BaseEndpoint, Credentials: o.Credentials})
	p, err := stream.NewPoller(sc, arn, func(o *stream.PollerOptions) { o.StopWhenCaughtUp = true })
	if err != nil {
		log.Fatal(err)
	}
	dec, err := stream.NewDecoder[Order](c, layout)
	if err != nil {
		log.Fatal(err)
	}
	states := map[string]stream.State{} // the consumer's store, by base and id
	err = p.Poll(ctx, func(ctx context.Context, b stream.Batch) error {
		for _, r := range b.Records {
			e, ok, err := dec.Event(r.Record)
			if err != nil {
				return err
			}
			if !ok || e.ID == "" { // not an item: the layout record has no id
				continue
			}
			st := states[e.Base+"/"+e.ID]
			ch, err := dec.Apply(ctx, &st, e)
			if err != nil {
				return err
			}
			states[e.Base+"/"+e.ID] = st // with the change, both or neither
			fmt.Println(ch.Kind, ch.Base, ch.ID, ch.Item.Total)
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// Put 2026-11-27 o1 10
	// Put 2026-11-27 o1 12
	// Delete 2026-11-27 o1 0
}
