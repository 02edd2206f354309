package backend_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/dynashardtest"
	"github.com/dynashard/dynashard/examples/internal/backend"
	"github.com/dynashard/dynashard/examples/internal/svctest"
	"github.com/dynashard/dynashard/shard"
)

// No TestMain holds servers here: TestEmbedded checks that Close stops the
// server Open started, which a handle held for the whole binary would keep
// running. TestEnsureTable starts each selected server once.

// testLayout describes a table with a composite key, as the examples'.
func testLayout(name string) shard.Layout {
	return shard.Layout{Table: name, PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(4)}
}

// TestEmbedded starts and stops a server of its own, as the examples do.
func TestEmbedded(t *testing.T) {
	servers, err := svctest.Selected()
	if err != nil {
		t.Fatal(err)
	}
	kind := servers[len(servers)-1].Kind // dynalite, the quicker one, unless DYNASHARD_SERVER says otherwise
	if servers[len(servers)-1].Endpoint != "" {
		t.Skip("DYNASHARD_SERVER selects an endpoint; this test starts a local server")
	}
	ctx := context.Background()
	b, err := backend.Open(ctx, backend.Config{Server: kind})
	if err != nil {
		t.Fatal(err)
	}
	if b.Embedded == "" || b.Remote {
		t.Errorf("Open: Embedded %q, Remote %v; want an embedded local server", b.Embedded, b.Remote)
	}
	in, err := testLayout(dynashardtest.TableName("embedded")).CreateTableInput()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.EnsureTable(ctx, in); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	noRetry := func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }
	if _, err := b.Client.ListTables(cctx, &dynamodb.ListTablesInput{}, noRetry); err == nil {
		t.Error("the server still answers after Close")
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestOpenInvalid(t *testing.T) {
	for name, cfg := range map[string]backend.Config{
		"endpoint not a URL": {Endpoint: "127.0.0.1:8000"},
		"unknown server":     {Server: "cassandra"},
	} {
		b, err := backend.Open(context.Background(), cfg)
		if err == nil {
			if err := b.Close(); err != nil {
				t.Error(err)
			}
		}
		if !errors.Is(err, dynashard.ErrInvalid) {
			t.Errorf("%s: Open(%+v): got %v, want an error matching dynashard.ErrInvalid", name, cfg, err)
		}
	}
}

func TestEnsureTable(t *testing.T) {
	svctest.Each(t, func(t *testing.T, srv *dynashardtest.Server) {
		ctx := context.Background()
		b, err := backend.Open(ctx, backend.Config{Endpoint: srv.Endpoint()})
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := b.Close(); err != nil {
				t.Error(err)
			}
		}()
		name := dynashardtest.TableName("ensure")
		in, err := testLayout(name).CreateTableInput()
		if err != nil {
			t.Fatal(err)
		}

		// Several processes starting at once all find the table ready.
		const starters = 4
		var wg sync.WaitGroup
		errs := make([]error, starters)
		for i := range starters {
			wg.Go(func() { errs[i] = b.EnsureTable(ctx, in) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		before := b.Requests.Snapshot()
		if err := b.EnsureTable(ctx, in); err != nil {
			t.Fatal(err)
		}
		if got := b.Requests.Snapshot().Sub(before); fmt.Sprint(got) != fmt.Sprint(backend.Counts{"DescribeTable": 1}) {
			t.Errorf("EnsureTable of an existing table sent %v, want DescribeTable 1", got)
		}
		out, err := b.Client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err != nil || out.Table.TableStatus != types.TableStatusActive || out.Table.BillingModeSummary == nil ||
			out.Table.BillingModeSummary.BillingMode != types.BillingModePayPerRequest {
			t.Errorf("table after EnsureTable: %+v, %v; want ACTIVE and on-demand", out, err)
		}

		if err := b.DeleteTables(ctx, name, name+"-never-created"); err != nil {
			t.Errorf("DeleteTables: %v", err)
		}
		var nf *types.ResourceNotFoundException
		for range 100 { // deletion may take a moment
			if _, err = b.Client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}); errors.As(err, &nf) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if !errors.As(err, &nf) {
			t.Errorf("table after DeleteTables: %v, want ResourceNotFoundException", err)
		}
	})
}

func TestCounts(t *testing.T) {
	a := backend.Counts{"Query": 5, "PutItem": 2}
	b := backend.Counts{"Query": 21, "PutItem": 2, "GetItem": 1}
	got := b.Sub(a)
	if fmt.Sprint(got) != "GetItem 1, Query 16" || got.Total() != 17 {
		t.Errorf("Sub: got %v (total %d), want GetItem 1, Query 16 (17)", got, got.Total())
	}
	if s := (backend.Counts{}).String(); s != "none" {
		t.Errorf("empty Counts: got %q, want none", s)
	}
}
