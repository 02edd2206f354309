package split_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/chunk"
	"github.com/dynashard/dynashard/dynashardtest"
	"github.com/dynashard/dynashard/split"
)

// The guide's example: one product over ProductCatalog (read on every
// page view), ProductAvailability (written on every sale) and
// ExtendedProductCatalog (read on the detail page), keyed by Id, with the
// guide's sample rows.
func Example() {
	ctx := context.Background()
	// A local server (DynamoDB Local) stands in for DynamoDB here.
	srv, err := dynashardtest.NewServer()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	c := srv.Client()

	type Product struct {
		Id                    int    `dynamodbav:"Id"`
		Title                 string `dynamodbav:"Title,omitempty"`
		Description           string `dynamodbav:"Description,omitempty"`
		Price                 string `dynamodbav:"Price,omitempty"`
		QuantityOnHand        string `dynamodbav:"QuantityOnHand,omitempty"`
		AverageCustomerRating string `dynamodbav:"AverageCustomerRating,omitempty"`
		TrackListing          string `dynamodbav:"TrackListing,omitempty"`
	}
	layout := split.Layout{
		PartitionKey:     "Id",
		PartitionKeyType: "N",
		Parts: []split.Part{
			{Name: "catalog", Table: dynashardtest.TableName("ProductCatalog"), Attributes: []string{"Title", "Description"}},
			{Name: "availability", Table: dynashardtest.TableName("ProductAvailability"), Attributes: []string{"Price", "QuantityOnHand"}},
			{Name: "extended", Table: dynashardtest.TableName("ExtendedProductCatalog"), Attributes: []string{"AverageCustomerRating", "TrackListing"}},
		},
	}
	ins, err := layout.CreateTableInputs()
	if err != nil {
		log.Fatal(err)
	}
	for _, in := range ins {
		if err := srv.CreateTable(ctx, in); err != nil {
			log.Fatal(err)
		}
		defer c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: in.TableName})
	}
	products, err := split.New[Product](c, layout)
	if err != nil {
		log.Fatal(err)
	}

	// The guide's sample rows (ratings and the track listing are ours).
	for _, p := range []Product{
		{Id: 21, Title: "Famous Book", Description: "Lorem ipsum", Price: "$5.00 USD", QuantityOnHand: "3750", AverageCustomerRating: "4.5"},
		{Id: 302, Title: "Red Bicycle", Description: "Lorem ipsum", Price: "$125.00 USD", QuantityOnHand: "8", AverageCustomerRating: "4.0"},
		{Id: 58, Title: "Music Album", Description: "Lorem ipsum", Price: "$5.00 USD", QuantityOnHand: "infinity (digital item)", TrackListing: "1. Overture 2. Finale"},
	} {
		if _, err := products.Create(ctx, p); err != nil { // every part, or none
			log.Fatal(err)
		}
	}

	// The product page: the basic part only.
	page, err := products.Get(ctx, split.Key{PK: "302"}, []string{"catalog"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("page: %s (price not read: %q)\n", page.Item.Title, page.Item.Price)

	// The checkout: the availability part only, if the stock is still 8.
	// A Usage in the context shows what the call cost, per table.
	var used dynashard.Usage
	_, err = products.Update(dynashard.WithUsage(ctx, &used), split.Key{PK: "302"}, "availability",
		expression.Set(expression.Name("QuantityOnHand"), expression.Value("7")),
		func(o *split.Options) {
			o.Conditions = map[string]expression.ConditionBuilder{
				"availability": expression.Name("QuantityOnHand").Equal(expression.Value("8")),
			}
		})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("checkout: %.0f WCU, all on the availability table: %v\n", used.Total().Write, used.Table(layout.Parts[1].Table) == used.Total())
	_, err = products.Update(ctx, split.Key{PK: "302"}, "availability",
		expression.Set(expression.Name("QuantityOnHand"), expression.Value("7")),
		func(o *split.Options) {
			o.Conditions = map[string]expression.ConditionBuilder{
				"availability": expression.Name("QuantityOnHand").Equal(expression.Value("8")),
			}
		})
	fmt.Println("second checkout at the old stock:", errors.Is(err, split.ErrConflict))

	// The detail page: every part, in one BatchGetItem.
	all, err := products.GetMany(ctx, []split.Key{{PK: "21"}, {PK: "302"}, {PK: "58"}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range all {
		p := r.Item
		fmt.Printf("%d %s %s %s rating=%q tracks=%q\n", p.Id, p.Title, p.Price, p.QuantityOnHand, p.AverageCustomerRating, p.TrackListing)
	}

	// Deleting removes every part, as one unit.
	if err := products.Delete(ctx, split.Key{PK: "58"}); err != nil {
		log.Fatal(err)
	}
	_, err = products.Get(ctx, split.Key{PK: "58"}, nil)
	fmt.Println("58 after Delete:", errors.Is(err, split.ErrNotFound))
	// Output:
	// page: Red Bicycle (price not read: "")
	// checkout: 1 WCU, all on the availability table: true
	// second checkout at the old stock: true
	// 21 Famous Book $5.00 USD 3750 rating="4.5" tracks=""
	// 302 Red Bicycle $125.00 USD 7 rating="4.0" tracks=""
	// 58 Music Album $5.00 USD infinity (digital item) rating="" tracks="1. Overture 2. Finale"
	// 58 after Delete: true
}

// A dynashard.Usage in a call's context shows what the call cost, per
// table: the split saves the profile table a write when only the counter
// changes.
func Example_capacity() {
	ctx := context.Background()
	srv, err := dynashardtest.NewServer()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	c := srv.Client()
	type Item struct {
		ID   string `dynamodbav:"id"`
		Name string `dynamodbav:"name"`
		Hits int    `dynamodbav:"hits"`
	}
	layout := split.Layout{PartitionKey: "id", Parts: []split.Part{
		{Name: "profile", Table: dynashardtest.TableName("profile"), Attributes: []string{"name"}},
		{Name: "counters", Table: dynashardtest.TableName("counters"), Attributes: []string{"hits"}},
	}}
	ins, err := layout.CreateTableInputs()
	if err != nil {
		log.Fatal(err)
	}
	for _, in := range ins {
		if err := srv.CreateTable(ctx, in); err != nil {
			log.Fatal(err)
		}
		defer c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: in.TableName})
	}
	items, err := split.New[Item](c, layout)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := items.Create(ctx, Item{ID: "a", Name: "Ada", Hits: 1}); err != nil {
		log.Fatal(err)
	}
	var cost dynashard.Usage
	if _, err := items.Update(dynashard.WithUsage(ctx, &cost), split.Key{PK: "a"}, "counters",
		expression.Add(expression.Name("hits"), expression.Value(1))); err != nil {
		log.Fatal(err)
	}
	fmt.Println("profile:", cost.Table(layout.Parts[0].Table).Total(), "counters:", cost.Table(layout.Parts[1].Table).Total())
	// Output:
	// profile: 0 counters: 1
}

// A part whose value may exceed DynamoDB's 400 KB item limit: the
// extended part holds a product's manual, stored through a chunk store
// (inline up to 4 KiB, in 384 KiB chunks above) with the part's item as
// its parent. Get returns it whole; Create writes it and the other parts
// in one transaction carrying the chunk store's flip; Delete removes its
// chunks.
func ExampleLargeField() {
	ctx := context.Background()
	srv, err := dynashardtest.NewServer()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	c := srv.Client()
	type Product struct {
		Id     int    `dynamodbav:"Id"`
		Title  string `dynamodbav:"Title"`
		Rating string `dynamodbav:"Rating"`
		Manual []byte `dynamodbav:"Manual"`
	}
	extended := dynashardtest.TableName("ExtendedProductCatalog")
	manuals, err := chunk.New(c, extended, dynashardtest.TableName("ManualChunks"))
	if err != nil {
		log.Fatal(err)
	}
	layout := split.Layout{PartitionKey: "Id", PartitionKeyType: "N", Parts: []split.Part{
		{Name: "catalog", Table: dynashardtest.TableName("ProductCatalog"), Attributes: []string{"Title"}},
		{Name: "extended", Table: extended, Attributes: []string{"Rating", "Manual"},
			Large: &split.LargeField{Attribute: "Manual", Store: manuals}},
	}}
	ins, err := layout.CreateTableInputs() // both parts' tables, then the chunk table
	if err != nil {
		log.Fatal(err)
	}
	for _, in := range ins {
		if err := srv.CreateTable(ctx, in); err != nil {
			log.Fatal(err)
		}
		defer c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: in.TableName})
	}
	products, err := split.New[Product](c, layout)
	if err != nil {
		log.Fatal(err)
	}

	manual := bytes.Repeat([]byte("Pedal forward. "), 60_000) // 900,000 bytes
	if _, err := products.Create(ctx, Product{Id: 302, Title: "Red Bicycle", Rating: "4.0", Manual: manual}); err != nil {
		log.Fatal(err)
	}
	page, err := products.Get(ctx, split.Key{PK: "302"}, []string{"catalog"}) // no manual read
	if err != nil {
		log.Fatal(err)
	}
	detail, err := products.Get(ctx, split.Key{PK: "302"}, []string{"extended"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("page: %s, %d manual bytes\n", page.Item.Title, len(page.Item.Manual))
	fmt.Printf("detail: rating %s, manual of %d bytes, whole: %v\n", detail.Item.Rating, len(detail.Item.Manual), bytes.Equal(detail.Item.Manual, manual))
	if err := products.Delete(ctx, split.Key{PK: "302"}); err != nil {
		log.Fatal(err)
	}
	_, err = products.Get(ctx, split.Key{PK: "302"}, nil)
	fmt.Println("after Delete:", errors.Is(err, split.ErrNotFound))
	// Output:
	// page: Red Bicycle, 0 manual bytes
	// detail: rating 4.0, manual of 900000 bytes, whole: true
	// after Delete: true
}
