package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/internal/ddbsize"
	"github.com/dynashard/dynashard/split"
)

// guideProduct is scenario 9's product: the guide's "3 KB item", one
// struct over its three parts.
type guideProduct struct {
	Id             int    `dynamodbav:"Id"`
	Title          string `dynamodbav:"Title"`
	Description    string `dynamodbav:"Description"`
	Price          string `dynamodbav:"Price"`
	QuantityOnHand int    `dynamodbav:"QuantityOnHand"`
	// Offer is the text shown beside the price, changed with it; it makes
	// the availability part the guide's 300 bytes.
	Offer                 string   `dynamodbav:"Offer"`
	AverageCustomerRating float64  `dynamodbav:"AverageCustomerRating"`
	TrackListing          []string `dynamodbav:"TrackListing"`
}

// benchProduct returns the guide's Famous Book at about 3 KB: 1.2 KB of
// description, a 300-byte availability part and 1.4 KB of extended data.
func benchProduct() guideProduct {
	p := guideProduct{
		Id: 21, Title: "Famous Book", Description: strings.Repeat("Lorem ipsum dolor sit amet. ", 43),
		Price: "$5.00 USD", QuantityOnHand: 3750,
		Offer:                 strings.Repeat("Free shipping on orders over $25. ", 7),
		AverageCustomerRating: 4.5,
	}
	for i := range 20 {
		p.TrackListing = append(p.TrackListing, fmt.Sprintf("%02d. A chapter read aloud, with a title long enough to matter", i+1))
	}
	return p
}

// splitLayout is the guide's three tables, named as the bench's tables are.
func splitLayout(catalog, availability, extended string) split.Layout {
	return split.Layout{
		PartitionKey:     "Id",
		PartitionKeyType: "N",
		Parts: []split.Part{
			{Name: "catalog", Table: catalog, Attributes: []string{"Title", "Description"}},
			{Name: "availability", Table: availability, Attributes: []string{"Price", "QuantityOnHand", "Offer"}},
			{Name: "extended", Table: extended, Attributes: []string{"AverageCustomerRating", "TrackListing"}},
		},
	}
}

// splitCosts are scenario 9's capacity figures, as the server reported
// them. create is 0 (and noTx set) on a server without transactions.
type splitCosts struct {
	sizes                      map[string]int  // item bytes: "whole" and each part
	onePrice, oneBasic, oneGet float64         // one table: UpdateItem, GetItem with a projection, GetItem
	oneCreate                  float64         // PutItem
	price, basic, both, create dynashard.Usage // split: Update, Get catalog, Get catalog+availability, Create
	noTx                       bool
}

// splitItems is scenario 9: the guide's product in one table beside the
// same product split over three with package split, directly against the
// server (no proxy): the capacity DynamoDB reports for a price update and a
// page view, and the latency of the page's reads.
func (b *bencher) splitItems(ctx context.Context) (*section, error) {
	endpoint, err := b.server(ctx)
	if err != nil {
		return nil, err
	}
	direct := b.client(endpoint, 16)
	var tables []string
	for range 4 {
		name, drop, err := b.newTable(ctx, direct, "Id:N")
		if err != nil {
			return nil, err
		}
		defer drop()
		tables = append(tables, name)
	}
	one, layout := tables[0], splitLayout(tables[1], tables[2], tables[3])
	st, err := split.New[guideProduct](direct, layout)
	if err != nil {
		return nil, err
	}
	b.prog.status("capacity")
	costs, err := measureSplitCosts(ctx, direct, one, st, layout)
	if err != nil {
		return nil, err
	}
	sec := &section{title: "One item over three tables (package split)"}
	sec.intro = append(sec.intro, fmt.Sprintf(
		"The guide's product as one item of %d bytes in one table, beside the same product split by package split over "+
			"ProductCatalog (Title, Description: %d bytes), ProductAvailability (Price, QuantityOnHand, Offer: %d bytes) and "+
			"ExtendedProductCatalog (AverageCustomerRating, TrackListing: %d bytes), item sizes as DynamoDB counts them. "+
			"Capacity units are the server's own report (ReturnConsumedCapacity, through a dynashard.Usage in each split call's context), reads "+
			"eventually consistent. This scenario talks to the server directly, without the fault proxy.",
		costs.sizes["whole"], costs.sizes["catalog"], costs.sizes["availability"], costs.sizes["extended"]))
	t := sec.table("operation", "one table", "split", "split, by table", "the guide")
	byPart := func(c *dynashard.Usage) string { return partUnits(c, layout) }
	t.row("price update, WCU", cu(costs.onePrice)+" (UpdateItem)", cu(costs.price.Total().Total()), byPart(&costs.price), "3 vs 1")
	t.row("basic page view, RCU", cu(costs.oneBasic)+" (GetItem of Title, Description)", cu(costs.basic.Total().Total()), byPart(&costs.basic),
		"no saving for a GetItem of an item under 4 KB")
	t.row("basic + availability view, RCU", cu(costs.oneGet)+" (GetItem)", cu(costs.both.Total().Total()), byPart(&costs.both), "")
	create, createParts := "n/a (no transactions)", "n/a"
	if !costs.noTx {
		create, createParts = cu(costs.create.Total().Total())+" (TransactWriteItems)", byPart(&costs.create)
	}
	t.row("create, WCU", cu(costs.oneCreate)+" (PutItem)", create, createParts, "AWS docs: a transaction costs twice the units of plain writes")

	lat, err := b.splitLatency(ctx, direct, one, st)
	if err != nil {
		return sec, err
	}
	l := sec.table("read", "requests", "median ms", "p90 ms", "median ÷ GetItem")
	for _, r := range lat.rows {
		l.row(r.name, r.requests, fmt.Sprintf("%.2f", ms64(r.median)), fmt.Sprintf("%.2f", ms64(r.p90)),
			fmt.Sprintf("%.2f×", float64(r.median)/float64(lat.rows[0].median)))
	}
	sec.notes = append(sec.notes, splitVerdict(costs, lat))
	return sec, nil
}

// measureSplitCosts writes and reads the product both ways once, recording
// the capacity the server reports for each request.
func measureSplitCosts(ctx context.Context, c *dynamodb.Client, one string, st *split.Store[guideProduct], layout split.Layout) (*splitCosts, error) {
	p := benchProduct()
	whole, err := attributevalue.MarshalMap(p)
	if err != nil {
		return nil, err
	}
	costs := &splitCosts{sizes: map[string]int{}}
	if costs.sizes["whole"], err = ddbsize.ItemSize(whole); err != nil {
		return costs, err
	}
	for _, part := range layout.Parts {
		if costs.sizes[part.Name], err = ddbsize.ItemSize(partItem(whole, part)); err != nil {
			return costs, err
		}
	}
	key := map[string]types.AttributeValue{"Id": whole["Id"]}
	total := types.ReturnConsumedCapacityTotal
	units := func(cc *types.ConsumedCapacity) float64 {
		if cc == nil {
			return 0
		}
		return aws.ToFloat64(cc.CapacityUnits)
	}

	// One table.
	put, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(one), Item: whole, ReturnConsumedCapacity: total})
	if err != nil {
		return costs, err
	}
	up, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(one), Key: key, UpdateExpression: aws.String("SET Price = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: "$4.50 USD"}},
		ReturnConsumedCapacity:    total,
	})
	if err != nil {
		return costs, err
	}
	basic, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(one), Key: key,
		ProjectionExpression: aws.String("Title, Description"), ReturnConsumedCapacity: total})
	if err != nil {
		return costs, err
	}
	all, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(one), Key: key, ReturnConsumedCapacity: total})
	if err != nil {
		return costs, err
	}
	costs.oneCreate, costs.onePrice, costs.oneBasic, costs.oneGet = units(put.ConsumedCapacity), units(up.ConsumedCapacity),
		units(basic.ConsumedCapacity), units(all.ConsumedCapacity)

	// Split.
	_, err = st.Create(dynashard.WithUsage(ctx, &costs.create), p)
	if errors.Is(err, split.ErrNoTransactions) {
		// dynalite: the parts are written one PutItem each, as an import
		// would; everything else works without transactions.
		costs.noTx = true
		for _, part := range layout.Parts {
			if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(part.Table), Item: partItem(whole, part)}); err != nil {
				return costs, err
			}
		}
	} else if err != nil {
		return costs, err
	}
	k := split.Key{PK: "21"}
	if _, err := st.Update(dynashard.WithUsage(ctx, &costs.price), k, "availability", expression.Set(expression.Name("Price"), expression.Value("$4.50 USD"))); err != nil {
		return costs, err
	}
	for _, g := range []struct {
		parts []string
		into  *dynashard.Usage
	}{{[]string{"catalog"}, &costs.basic}, {[]string{"catalog", "availability"}, &costs.both}} {
		r, err := st.Get(dynashard.WithUsage(ctx, g.into), k, g.parts)
		if err != nil {
			return costs, err
		}
		if len(r.Missing) > 0 {
			return costs, fmt.Errorf("split.Get %v: parts %v missing", g.parts, r.Missing)
		}
	}
	return costs, nil
}

// partItem is the item of part in its table: the key and the part's
// attributes of whole.
func partItem(whole map[string]types.AttributeValue, part split.Part) map[string]types.AttributeValue {
	item := map[string]types.AttributeValue{"Id": whole["Id"]}
	for _, a := range part.Attributes {
		if v, ok := whole[a]; ok {
			item[a] = v
		}
	}
	return item
}

// partUnits renders c by part, "availability 1", in the layout's order.
func partUnits(c *dynashard.Usage, l split.Layout) string {
	var cells []string
	for _, p := range l.Parts {
		if u := c.Table(p.Table).Total(); u != 0 {
			cells = append(cells, fmt.Sprintf("%s %s", p.Name, cu(u)))
		}
	}
	if len(cells) == 0 {
		return "none reported"
	}
	return strings.Join(cells, ", ")
}

// splitLatencies are scenario 9's timed reads, the baseline first.
type splitLatencies struct {
	reads int
	rows  []latencyRow
	cpu   cpuUse
}

type latencyRow struct {
	name, requests string
	median, p90    time.Duration
}

// splitLatency times the page's reads, round-robin so that a slow moment
// of the machine falls on every method alike: one GetItem of the whole
// item (the baseline), split.Get of the basic part, and split.Get of the
// basic and availability parts (one BatchGetItem over two tables).
func (b *bencher) splitLatency(ctx context.Context, c *dynamodb.Client, one string, st *split.Store[guideProduct]) (splitLatencies, error) {
	key := map[string]types.AttributeValue{"Id": &types.AttributeValueMemberN{Value: "21"}}
	get := func(parts ...string) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := st.Get(ctx, split.Key{PK: "21"}, parts)
			return err
		}
	}
	methods := []struct {
		name, requests string
		read           func(context.Context) error
	}{
		{"GetItem of the whole item, one table (baseline)", "1 GetItem", func(ctx context.Context) error {
			_, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(one), Key: key})
			return err
		}},
		{"split.Get: basic part", "1 BatchGetItem, 1 table", get("catalog")},
		{"split.Get: basic + availability parts", "1 BatchGetItem, 2 tables", get("catalog", "availability")},
	}
	n := b.cfg.splitReads
	times := make([][]time.Duration, len(methods))
	warm := max(10, n/10)
	var s0 cpuSample
	for i := range warm + n {
		if i == warm {
			s0 = sampleCPU()
			b.prog.status(fmt.Sprintf("%d timed reads of each kind", n))
		}
		for j := range methods {
			m := (i + j) % len(methods)
			start := time.Now()
			if err := methods[m].read(ctx); err != nil {
				return splitLatencies{}, fmt.Errorf("%s: %w", methods[m].name, err)
			}
			if i >= warm {
				times[m] = append(times[m], time.Since(start))
			}
		}
	}
	lat := splitLatencies{reads: n, cpu: cpuBetween(s0, sampleCPU())}
	for m, x := range methods {
		lat.rows = append(lat.rows, latencyRow{name: x.name, requests: x.requests, median: median(times[m]), p90: quantile(times[m], 0.9)})
	}
	return lat, nil
}

// splitVerdict compares the figures with the guide's.
func splitVerdict(c *splitCosts, lat splitLatencies) string {
	var s strings.Builder
	fmt.Fprintf(&s, "A price update cost %s WCU in one table and %s WCU split", cu(c.onePrice), cu(c.price.Total().Total()))
	if c.onePrice == 3 && c.price.Total().Total() == 1 {
		s.WriteString(", the guide's figures. ")
	} else {
		s.WriteString(", where the guide says 3 and 1. ")
	}
	fmt.Fprintf(&s, "A basic page view cost %s RCU in one table and %s split: GetItem and BatchGetItem round each item up "+
		"to 4 KB, so splitting an item under 4 KB saves nothing on point reads (Query and Scan sum the items before rounding). ",
		cu(c.oneBasic), cu(c.basic.Total().Total()))
	if !c.noTx {
		plain := 0 // the parts' units as plain writes: one per started KB
		for name, n := range c.sizes {
			if name != "whole" {
				plain += (n + 1023) / 1024
			}
		}
		fmt.Fprintf(&s, "Creating the product, one TransactWriteItems, cost %s WCU: %.0f× the %d units of plain writes of its "+
			"parts, where the AWS documentation charges a transaction twice. ", cu(c.create.Total().Total()), c.create.Total().Total()/float64(plain), plain)
	}
	if len(lat.rows) == 3 {
		base, both := lat.rows[0].median, lat.rows[2].median
		fmt.Fprintf(&s, "Reading the basic and availability parts took %.2f ms (median of %d) against %.2f ms for one GetItem "+
			"of the whole item in the same run: %.2f×, and %.2f× for the basic part alone.",
			ms64(both), lat.reads, ms64(base), float64(both)/float64(base), float64(lat.rows[1].median)/float64(base))
		s.WriteString(" On loopback that ratio is the server's work per request and per table; over a network both reads are one round trip.")
	}
	if lat.cpu.machineKnown {
		fmt.Fprintf(&s, " The machine was %s busy during the timed reads (client %.2f cores", pct(lat.cpu.machine), lat.cpu.client)
		if lat.cpu.serverKnown {
			fmt.Fprintf(&s, ", server %.2f cores", lat.cpu.server)
		}
		s.WriteString(").")
	}
	return strings.TrimSpace(s.String())
}

// cu formats capacity units as reported: 0.5, 1, 20.
func cu(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func ms64(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// quantile returns the q-quantile of ds (nearest rank).
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}
