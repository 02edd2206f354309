package dynashardtest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
)

func withProxy(cfg faultproxy.Config) func(*Options) {
	return func(o *Options) { o.Proxy = &cfg }
}

// TestProxy: with Options.Proxy, a handle's Endpoint and Client go through
// a proxy of its own, which Close stops; handles without one reach the
// same server directly.
func TestProxy(t *testing.T) {
	for _, k := range kinds {
		t.Run(string(k), func(t *testing.T) {
			direct := Start(t, withKind(k))
			if direct.Proxy() != nil {
				t.Errorf("Proxy() without Options.Proxy = %v, want nil", direct.Proxy())
			}
			s, err := NewServer(withKind(k), withProxy(faultproxy.Config{}))
			if err != nil {
				t.Fatal(err)
			}
			p := s.Proxy()
			if p == nil || s.Endpoint() != p.URL() || s.Endpoint() == direct.Endpoint() {
				t.Fatalf("Endpoint() %s, Proxy() %v, server at %s: want the proxy's URL", s.Endpoint(), p, direct.Endpoint())
			}
			other := Start(t, withKind(k), withProxy(faultproxy.Config{}))
			if other.Proxy() == p {
				t.Error("two handles with Options.Proxy share a proxy, want one each")
			}
			roundTrip(t, s)
			if st := p.Stats().Ops; st["PutItem"].Forwarded != 1 || st["CreateTable"].Forwarded != 1 {
				t.Errorf("proxy counted PutItem %+v, CreateTable %+v, want one of each forwarded", st["PutItem"], st["CreateTable"])
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if err := answers(p.URL()); err == nil {
				t.Errorf("proxy %s still answers after Close", p.URL())
			}
			if err := answers(direct.Endpoint()); err != nil {
				t.Errorf("server stopped by closing a handle with a proxy: %v", err)
			}
		})
	}
}

// TestProxyThrottles: the partition model throttles a provisioned table
// created through the handle, and UnprocessedRate (set mid-test) hands
// batch writes back.
func TestProxyThrottles(t *testing.T) {
	for _, k := range kinds {
		t.Run(string(k), func(t *testing.T) {
			s := Start(t, withKind(k), withProxy(faultproxy.Config{
				Model: faultproxy.Partitioned, Partition: faultproxy.PartitionConfig{BurstWindow: time.Millisecond},
			}))
			ctx := context.Background()
			table := TableName(t.Name())
			err := s.CreateTable(ctx, &dynamodb.CreateTableInput{
				TableName:             aws.String(table),
				AttributeDefinitions:  []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
				KeySchema:             []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
				ProvisionedThroughput: &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(1), WriteCapacityUnits: aws.Int64(1)},
			})
			if err != nil {
				t.Fatal(err)
			}
			tables := s.Proxy().Stats().Tables
			if ts := tables[faultproxy.TableKey{Table: table}]; ts.WCU != 1 || len(ts.Partitions) != 1 {
				t.Errorf("proxy's table: %+v, want 1 WCU on 1 partition (from the CreateTable it forwarded)", ts)
			}
			c := s.Client(func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
			put := func(i int) error {
				_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table),
					Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: fmt.Sprint(i)}}})
				return err
			}
			var pte *types.ProvisionedThroughputExceededException
			for i := 0; i < 100 && pte == nil; i++ {
				if err := put(i); err != nil && !errors.As(err, &pte) {
					t.Fatal(err)
				}
			}
			if pte == nil {
				t.Fatal("100 writes to a 1 WCU table: no ProvisionedThroughputExceededException")
			}

			if err := s.Proxy().Set(faultproxy.Config{Model: faultproxy.Partitioned, UnprocessedRate: 1}); err != nil {
				t.Fatal(err)
			}
			out, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: {
				{DeleteRequest: &types.DeleteRequest{Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "0"}}}},
			}}})
			if err != nil {
				t.Fatal(err)
			}
			if got := len(out.UnprocessedItems[table]); got != 1 {
				t.Errorf("BatchWriteItem at UnprocessedRate 1: got %d unprocessed, want 1", got)
			}
		})
	}
}

// TestProxyEndpoint: a proxy in front of an Options.Endpoint.
func TestProxyEndpoint(t *testing.T) {
	base := Start(t, withKind(Dynalite))
	s := Start(t, func(o *Options) { o.Endpoint = base.Endpoint() }, withProxy(faultproxy.Config{}))
	if s.Proxy() == nil || s.Endpoint() != s.Proxy().URL() {
		t.Fatalf("Endpoint() %s, Proxy() %v: want the proxy's URL", s.Endpoint(), s.Proxy())
	}
	roundTrip(t, s)
	if got := s.Proxy().Stats().Ops["GetItem"].Forwarded; got != 1 {
		t.Errorf("proxy forwarded %d GetItem, want 1", got)
	}
}

// TestProxyBadConfig: an invalid Options.Proxy fails NewServer with
// dynashard.ErrInvalid and leaves nothing running.
func TestProxyBadConfig(t *testing.T) {
	for _, fn := range []func(*Options){
		withKind(Dynalite),
		func(o *Options) { o.Endpoint = "http://127.0.0.1:1" },
	} {
		s, err := NewServer(fn, withProxy(faultproxy.Config{UnprocessedRate: 2}))
		if !errors.Is(err, dynashard.ErrInvalid) || s != nil {
			t.Errorf("got %v, %v, want nil, an error matching dynashard.ErrInvalid", s, err)
		}
		if isRunning(Dynalite) {
			t.Error("dynalite left running after a bad Options.Proxy")
		}
		wantChildren(t, 0)
	}
}
