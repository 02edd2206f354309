package stream_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/localddb"
	"github.com/dynashard/dynashard/shard"
	"github.com/dynashard/dynashard/split"
	"github.com/dynashard/dynashard/stream"
)

type profile struct {
	Base string `dynamodbav:"base"`
	ID   string `dynamodbav:"id"`
	Name string `dynamodbav:"name"`
	Hits int    `dynamodbav:"hits"`
}

// TestPartDecoder: random Creates, Puts, Updates and Deletes of items
// split into a plain part and a sharded one, from two writers through a
// fault proxy; each part table's stream,
// replayed under random interleavings with batches delivered twice
// through a PartDecoder, leaves a mirror equal to the part's table.
func TestPartDecoder(t *testing.T) {
	ctx := context.Background()
	s := ddbtest.Get(t, localddb.DynamoDBLocal)
	c := s.Client()
	l := split.Layout{PartitionKey: "base", SortKey: "id", Parts: []split.Part{
		{Name: "profile", Table: ddbtest.TableName(), Attributes: []string{"name"}},
		{Name: "counters", Attributes: []string{"hits"}, Shard: &shard.Layout{Table: ddbtest.TableName(), PartitionKey: "pk", SortKey: "sk",
			Strategy: shard.Hash(4), Unchecked: true}},
	}}
	ins, err := l.CreateTableInputs()
	if err != nil {
		t.Fatal(err)
	}
	var arns []string
	for _, in := range ins {
		in.StreamSpecification = &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: ddbtypes.StreamViewTypeNewAndOldImages}
		name := s.CreateTable(t, in)
		arn, err := stream.StreamARN(ctx, c, name)
		if err != nil {
			t.Fatal(err)
		}
		arns = append(arns, arn)
	}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 1))
	t.Logf("seed %d", seed)
	// Two writers through a fault proxy (throttles, 500s and resets before
	// and after a write applied).
	p, err := faultproxy.New(aws.ToString(c.Options().BaseEndpoint), faultproxy.Config{ThrottleRate: 0.05, ErrorRate: 0.02, ErrorAfterRate: 0.02,
		ResetBeforeRate: 0.02, ResetAfterRate: 0.02, Seed: int64(seed)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	st, err := split.New[profile](dynamodb.New(c.Options(), func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(p.URL()) }), l)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 2 {
		rng := rand.New(rand.NewPCG(seed, uint64(10+w)))
		wg.Go(func() {
			for range 80 {
				k := split.Key{PK: fmt.Sprint("b", rng.IntN(2)), SK: fmt.Sprint("i", rng.IntN(6))}
				var err error
				switch rng.IntN(4) {
				case 0:
					_, err = st.Create(ctx, profile{Base: k.PK, ID: k.SK, Name: fmt.Sprint("n", rng.IntN(100)), Hits: 1})
				case 1:
					_, err = st.Put(ctx, profile{Base: k.PK, ID: k.SK, Name: fmt.Sprint("n", rng.IntN(100))}, []string{"profile"})
				case 2:
					_, err = st.Update(ctx, k, "counters", expression.Add(expression.Name("hits"), expression.Value(1)))
				default:
					err = st.Delete(ctx, k)
				}
				if err != nil && !errors.Is(err, split.ErrConflict) && !errors.Is(err, split.ErrNotFound) {
					t.Logf("%v: %v", k, err) // a fault the retries did not outlast: its outcome is unknown
				}
			}
		})
	}
	wg.Wait()

	for i, p := range l.Parts {
		sc, _ := streamsClient(t, c)
		recs := readAll(t, sc, arns[i])
		d, err := stream.NewPartDecoder(l, p.Name)
		if err != nil {
			t.Fatal(err)
		}
		want := partItems(t, c, aws.ToString(ins[i].TableName), d)
		for n := range 500 {
			order := recs
			if n > 0 {
				order = deliveries(rng, recs, 0.2)
			}
			mirror, states := map[split.Key]map[string]ddbtypes.AttributeValue{}, map[split.Key]stream.State{}
			for _, r := range order {
				k, err := partKey(d, r)
				if err != nil {
					t.Fatal(err)
				}
				state := states[k]
				ch, ok, err := d.Apply(&state, r)
				if err != nil || !ok {
					t.Fatalf("record of %v: ok %v, %v", k, ok, err)
				}
				states[k] = state
				switch ch.Kind {
				case stream.Put:
					mirror[k] = ch.Attributes
				case stream.Delete:
					delete(mirror, k)
				}
			}
			if df := partDiff(mirror, want); df != "" {
				t.Fatalf("part %s, interleaving %d: %s", p.Name, n, df)
			}
		}
		t.Logf("part %s: %d records, %d items, 500 interleavings equal to the table", p.Name, len(recs), len(want))
	}

}

// partKey is the logical key of a part's record, as the PartDecoder reads
// it (a State of its own, thrown away).
func partKey(d *stream.PartDecoder, r types.Record) (split.Key, error) {
	var s stream.State
	ch, _, err := d.Apply(&s, r)
	return ch.Key, err
}

// partItems is a part table's items by logical key (a consistent Scan).
func partItems(t *testing.T, c *dynamodb.Client, table string, d *stream.PartDecoder) map[split.Key]map[string]ddbtypes.AttributeValue {
	t.Helper()
	out, err := c.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	items := map[split.Key]map[string]ddbtypes.AttributeValue{}
	for _, item := range out.Items {
		keys := map[string]types.AttributeValue{}
		for name, v := range item {
			switch v := v.(type) {
			case *ddbtypes.AttributeValueMemberS:
				keys[name] = &types.AttributeValueMemberS{Value: v.Value}
			}
		}
		k, err := partKey(d, types.Record{EventName: types.OperationTypeRemove, Dynamodb: &types.StreamRecord{Keys: keys, SequenceNumber: aws.String("1")}})
		if err != nil {
			t.Fatal(err)
		}
		items[k] = item
	}
	return items
}

func partDiff(mirror, table map[split.Key]map[string]ddbtypes.AttributeValue) string {
	var d string
	for k, want := range table {
		if got, ok := mirror[k]; !ok || !sameItem(got, want, "") {
			d += fmt.Sprintf("%v: the mirror holds %v, the table %v; ", k, got, want)
		}
	}
	for k := range mirror {
		if _, ok := table[k]; !ok {
			d += fmt.Sprintf("%v: the mirror holds it, the table nothing; ", k)
		}
	}
	return d
}
