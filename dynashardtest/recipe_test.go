package dynashardtest_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/chunk"
	"github.com/dynashard/dynashard/dynashardtest"
	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/repo"
	"github.com/dynashard/dynashard/scatter"
	"github.com/dynashard/dynashard/shard"
)

// recipeOrder is an item of the recipe's sharded table.
type recipeOrder struct {
	Day    string `dynamodbav:"pk"`
	ID     string `dynamodbav:"sk"`
	Amount int    `dynamodbav:"amount"`
}

// recipe is one way the package doc tells a test to set a low capacity.
type recipe struct {
	name  string
	proxy faultproxy.Config
	// provision is the throughput tables get (nil: on demand); the
	// partition model takes it from the table.
	provision *types.ProvisionedThroughput
}

// recipes are the package doc's two recipes for seeing
// ProvisionedThroughputExceededException: the default (per-key) model with
// a low WCU and RCU, and the partition model on a table provisioned low.
// Neither sets a burst: the default of one second is what makes the
// throttle come within seconds.
var recipes = []recipe{
	{"per-key", faultproxy.Config{WCU: 1, RCU: 1}, nil},
	{"partitioned", faultproxy.Config{Model: faultproxy.Partitioned},
		&types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(1), WriteCapacityUnits: aws.Int64(1)}},
}

// throttled reports whether err carries DynamoDB's throttling exception,
// failing the test for any other error.
func throttled(t *testing.T, err error) bool {
	t.Helper()
	var pte *types.ProvisionedThroughputExceededException
	if errors.As(err, &pte) {
		return true
	}
	if err != nil {
		t.Fatalf("got %v, want nil or ProvisionedThroughputExceededException", err)
	}
	return false
}

// untilThrottled calls op up to 100 times and fails the test unless one
// call returns ProvisionedThroughputExceededException.
func untilThrottled(t *testing.T, what string, op func(i int) error) {
	t.Helper()
	for i := range 100 {
		if throttled(t, op(i)) {
			return
		}
	}
	t.Errorf("%s: 100 calls, no ProvisionedThroughputExceededException", what)
}

// setup is one recipe's server: a handle through the proxy, a client of it
// that makes one attempt, as the doc says, and a direct handle on the same
// server for writing test data without spending the capacity under test.
type setup struct {
	srv, direct *dynashardtest.Server
	client      *dynamodb.Client // through the proxy, one attempt
}

func start(t *testing.T, r recipe) setup {
	cfg := r.proxy
	srv := dynashardtest.Start(t, func(o *dynashardtest.Options) { o.Proxy = &cfg })
	return setup{
		srv:    srv,
		direct: dynashardtest.Start(t),
		client: srv.Client(func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }),
	}
}

// create creates the table in, provisioned as r says, directly (the proxy
// meets the table on its first request and asks for its throughput).
func (s setup) create(t *testing.T, r recipe, in *dynamodb.CreateTableInput) {
	t.Helper()
	in.ProvisionedThroughput = r.provision
	if r.provision != nil {
		in.BillingMode = types.BillingModeProvisioned
		for i := range in.GlobalSecondaryIndexes {
			in.GlobalSecondaryIndexes[i].ProvisionedThroughput = r.provision
		}
	}
	if err := s.direct.CreateTable(context.Background(), in); err != nil {
		t.Fatal(err)
	}
}

func (s setup) layout(t *testing.T, r recipe) shard.Layout {
	t.Helper()
	l := shard.Layout{Table: dynashardtest.TableName("recipe"), PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(2)}
	in, err := l.CreateTableInput()
	if err != nil {
		t.Fatal(err)
	}
	s.create(t, r, in)
	return l
}

// seed writes n orders of day directly, so that the layout record exists
// and reads have something to read.
func (s setup) seed(t *testing.T, l shard.Layout, day string, n int) {
	t.Helper()
	tbl, err := shard.NewTable[recipeOrder](s.direct.Client(), l)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Load(context.Background(), orders(day, n)); err != nil {
		t.Fatal(err)
	}
}

func orders(day string, n int) iter.Seq2[string, recipeOrder] {
	return func(yield func(string, recipeOrder) bool) {
		for i := range n {
			if !yield(day, recipeOrder{ID: fmt.Sprintf("ORD-%04d", i), Amount: i}) {
				return
			}
		}
	}
}

// TestThrottleRecipe follows the package doc's recipe for seeing
// ProvisionedThroughputExceededException through every entry point of the
// library, in both capacity models: calls that send one request per
// attempt return it (wrapped once, for errors.As); Table.Load and chunk's
// Store.Put retry throttling themselves, and the doc says how to see it
// there: in the proxy's counters, or as the error once their retries are
// taken away (Load's RetryBudget, a ThrottleRate on chunk's parent flip).
func TestThrottleRecipe(t *testing.T) {
	ctx := context.Background()
	dynashardtest.Start(t) // one server for every subtest
	for _, r := range recipes {
		t.Run(r.name, func(t *testing.T) {
			t.Run("shard.Table.Put", func(t *testing.T) {
				s := start(t, r)
				l := s.layout(t, r)
				s.seed(t, l, "2014-07-09", 1)
				tbl, err := shard.NewTable[recipeOrder](s.client, l)
				if err != nil {
					t.Fatal(err)
				}
				untilThrottled(t, "Table.Put", func(i int) error {
					return tbl.Put(ctx, "2014-07-09", recipeOrder{ID: "ORD-0000", Amount: i})
				})
			})
			t.Run("shard.Table.Load", func(t *testing.T) {
				s := start(t, r)
				l := s.layout(t, r)
				s.seed(t, l, "2014-07-09", 1)
				tbl, err := shard.NewTable[recipeOrder](s.client, l)
				if err != nil {
					t.Fatal(err)
				}
				// Load retries throttling: it writes everything, and the
				// proxy counts what it refused.
				before := s.srv.Proxy().Stats().Total
				st, err := tbl.Load(ctx, orders("2014-07-10", 6))
				if err != nil {
					t.Fatal(err)
				}
				after := s.srv.Proxy().Stats().Total
				if st.Written != 6 {
					t.Errorf("Load wrote %d items, want 6", st.Written)
				}
				if after.Throttled+after.Unprocessed == before.Throttled+before.Unprocessed {
					t.Errorf("Load of 6 items at 1 WCU: the proxy refused nothing (%+v)", after)
				}
				// Without retries, Load returns the refusal itself.
				var err2 error
				for i := 0; i < 20 && err2 == nil; i++ {
					_, err2 = tbl.Load(ctx, orders("2014-07-10", 6), func(o *shard.LoadOptions) { o.RetryBudget = -1 })
				}
				if err2 == nil {
					t.Error("Load with RetryBudget -1 at 1 WCU: no error")
				}
			})
			t.Run("scatter.Scatter.All", func(t *testing.T) {
				s := start(t, r)
				l := s.layout(t, r)
				s.seed(t, l, "2014-07-09", 20)
				sc, err := scatter.New(s.client, l)
				if err != nil {
					t.Fatal(err)
				}
				untilThrottled(t, "Scatter.All", func(int) error {
					for _, err := range sc.All(ctx, "2014-07-09") {
						if err != nil {
							var se *scatter.ShardError
							if !errors.As(err, &se) && !throttled(t, err) {
								t.Errorf("got %v, want a *scatter.ShardError", err)
							}
							return err
						}
					}
					return nil
				})
			})
			t.Run("repo.Repo.Get", func(t *testing.T) {
				s := start(t, r)
				l := s.layout(t, r)
				s.seed(t, l, "2014-07-09", 1)
				rp, err := repo.New[recipeOrder](s.client, l)
				if err != nil {
					t.Fatal(err)
				}
				untilThrottled(t, "Repo.Get", func(int) error {
					_, err := rp.Get(ctx, "2014-07-09", "ORD-0000")
					return err
				})
			})
			t.Run("chunk.Store.Put", func(t *testing.T) {
				s := start(t, r)
				parents, chunks := dynashardtest.TableName("parents"), dynashardtest.TableName("chunks")
				for _, tb := range []struct{ name, key string }{{parents, "pk"}, {chunks, chunk.DefaultChunkKeyAttribute}} {
					s.create(t, r, &dynamodb.CreateTableInput{
						TableName:            aws.String(tb.name),
						AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(tb.key), AttributeType: types.ScalarAttributeTypeS}},
						KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(tb.key), KeyType: types.KeyTypeHash}},
						BillingMode:          types.BillingModePayPerRequest,
					})
				}
				st, err := chunk.New(s.client, parents, chunks)
				if err != nil {
					t.Fatal(err)
				}
				key := chunk.Key{PartitionName: "pk", Partition: &types.AttributeValueMemberS{Value: "thread-1"}}
				untilThrottled(t, "Store.Put", func(i int) error {
					_, err := st.Put(ctx, key, []byte(fmt.Sprint("reply ", i)))
					return err
				})
				// The parent flip (an UpdateItem) retries throttling itself,
				// up to ten attempts, whatever the client's retryer says:
				// with only writes limited, Puts succeed and the proxy
				// counts the flips it refused.
				if err := s.srv.Proxy().Set(faultproxy.Config{WCU: 1}); err != nil {
					t.Fatal(err)
				}
				for i := range 3 {
					if _, err := st.Put(ctx, key, []byte(fmt.Sprint("flip ", i))); err != nil {
						t.Fatalf("Put %d with writes limited: %v", i, err)
					}
				}
				flips := s.srv.Proxy().Stats().Ops["UpdateItem"].Throttled
				if flips == 0 {
					t.Error("3 Puts to one key at 1 WCU: no UpdateItem throttled")
				}
				// To see the exception from Put's flip, throttle every
				// UpdateItem: Put gives up after its attempts and returns it.
				if err := s.srv.Proxy().Set(faultproxy.Config{ThrottleRate: 1, Ops: []string{"UpdateItem"}}); err != nil {
					t.Fatal(err)
				}
				_, err = st.Put(ctx, key, []byte("one more reply"))
				if !throttled(t, err) {
					t.Error("Put with every flip throttled: no ProvisionedThroughputExceededException")
				}
				if got := s.srv.Proxy().Stats().Ops["UpdateItem"].Throttled - flips; got < 2 {
					t.Errorf("Put with every flip throttled: %d flips refused, want its retries", got)
				}
			})
		})
	}
}
