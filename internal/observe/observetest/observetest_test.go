package observetest

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/tracing"
	"github.com/google/go-cmp/cmp"
)

// TestTracer: spans keep their parent (by name, and by identity for
// Children), properties and status; Prefix drops the others; Take
// forgets.
func TestTracer(t *testing.T) {
	tr := &Tracer{Prefix: "dynashard."}
	ctx := context.Background()
	for range 2 {
		cctx, call := tr.StartSpan(ctx, "dynashard.x.Op")
		_, req := tr.StartSpan(cctx, "DynamoDB.GetItem") // dropped, but a parent
		req.End()
		ictx, inner := tr.StartSpan(cctx, "dynashard.y.Op")
		_, deep := tr.StartSpan(ictx, "dynashard.z.Op")
		deep.End()
		inner.SetProperty("k", 1)
		inner.SetStatus(tracing.SpanStatusError)
		inner.End()
		call.End()
	}
	ops := tr.Named("dynashard.x.Op")
	if len(ops) != 2 || !ops[0].Ended || ops[0].Parent != "" {
		t.Fatalf("Named: %+v, want two ended roots", ops)
	}
	kids := tr.Children(ops[1])
	if len(kids) != 1 || kids[0].Name != "dynashard.y.Op" || kids[0].Parent != "dynashard.x.Op" ||
		kids[0].Status != tracing.SpanStatusError || kids[0].Properties["k"] != 1 {
		t.Errorf("Children of the second call: %+v, want its one dynashard.y.Op", kids)
	}
	if got := tr.Children(Span{}); len(got) != 0 {
		t.Errorf("Children of a zero Span: %+v, want none", got)
	}
	if got := tr.Take(); len(got) != 6 {
		t.Errorf("Take: %d spans, want 6", len(got))
	}
	if got := tr.Spans(); len(got) != 0 {
		t.Errorf("Spans after Take: %+v, want none", got)
	}
}

// answer is an HTTP client answering every request with an empty JSON
// object, as DynamoDB would an empty result.
type answer struct{}

func (answer) Do(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Body: io.NopCloser(strings.NewReader("{}")), Request: r}, nil
}

// TestAsks: every request is recorded once, by operation, with NoField
// for a request without the field; two Asks can watch one client.
func TestAsks(t *testing.T) {
	var a, b Asks
	c := dynamodb.New(dynamodb.Options{Region: "local", BaseEndpoint: aws.String("http://localhost"),
		Credentials: aws.AnonymousCredentials{}, HTTPClient: answer{}}, a.Option, b.Option)
	ctx := context.Background()
	for _, rc := range []types.ReturnConsumedCapacity{"", types.ReturnConsumedCapacityIndexes, ""} {
		if _, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}}, ReturnConsumedCapacity: rc}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("t")}); err != nil {
		t.Fatal(err)
	}
	want := map[string][]types.ReturnConsumedCapacity{"GetItem": {"", "INDEXES", ""}, "DescribeTable": {NoField}}
	got := a.Take()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Take (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string][]types.ReturnConsumedCapacity{"GetItem": {"", "INDEXES"}, "DescribeTable": {NoField}}, Distinct(got)); diff != "" {
		t.Errorf("Distinct (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, b.Take()); diff != "" {
		t.Errorf("the second Asks (-want +got):\n%s", diff)
	}
	if got := a.Take(); len(got) != 0 {
		t.Errorf("Take again: %v, want nothing", got)
	}
}

// TestUnits: DynamoDB's rounding, and its minimum for an absent item.
func TestUnits(t *testing.T) {
	for _, tc := range []struct {
		size              int
		write, read, cons float64
	}{{0, 1, 0.5, 1}, {1024, 1, 0.5, 1}, {1025, 2, 0.5, 1}, {4097, 5, 1, 2}} {
		if w, r, c := WriteUnits(tc.size), ReadUnits(tc.size, false), ReadUnits(tc.size, true); w != tc.write || r != tc.read || c != tc.cons {
			t.Errorf("%d bytes: got %v, %v, %v; want %v, %v, %v", tc.size, w, r, c, tc.write, tc.read, tc.cons)
		}
	}
}
