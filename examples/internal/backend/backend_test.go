package backend

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

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/localddb"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }

// TestEmbedded starts and stops a server of its own, as the examples do.
func TestEmbedded(t *testing.T) {
	ctx := context.Background()
	b, err := Open(ctx, Config{Server: localddb.Dynalite})
	if err != nil {
		t.Fatal(err)
	}
	if b.Embedded == "" || b.Remote {
		t.Errorf("Open: Embedded %q, Remote %v; want an embedded local server", b.Embedded, b.Remote)
	}
	in, err := ddbtest.TableInput("pk:S")
	if err != nil {
		t.Fatal(err)
	}
	in.TableName = aws.String("embedded")
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

func TestEnsureTable(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		b, err := Open(ctx, Config{Endpoint: s.Endpoint})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		in, err := ddbtest.TableInput("pk:S", "sk:S")
		if err != nil {
			t.Fatal(err)
		}
		name := ddbtest.TableName()
		in.TableName = aws.String(name)

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
		if got := b.Requests.Snapshot().Sub(before); fmt.Sprint(got) != fmt.Sprint(Counts{"DescribeTable": 1}) {
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
	a := Counts{"Query": 5, "PutItem": 2}
	b := Counts{"Query": 21, "PutItem": 2, "GetItem": 1}
	got := b.Sub(a)
	if fmt.Sprint(got) != "GetItem 1, Query 16" || got.Total() != 17 {
		t.Errorf("Sub: got %v (total %d), want GetItem 1, Query 16 (17)", got, got.Total())
	}
	if s := (Counts{}).String(); s != "none" {
		t.Errorf("empty Counts: got %q, want none", s)
	}
}
