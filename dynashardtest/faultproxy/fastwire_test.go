package faultproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/dynashard/dynashard/internal/localddb"
)

// The fast readers must give encoding/json's answers. These tests and
// FuzzFastWire compare each with its encoding/json reference on the same
// bytes, and check that the bodies the SDK sends take the fast path.

type captureKey struct{}

var errCaptured = errors.New("captured")

// captureClient is a real SDK client whose requests stop once serialized:
// the body goes to the *[]byte in the context, nothing is sent.
var captureClient = sync.OnceValue(func() *dynamodb.Client {
	capture := middleware.FinalizeMiddlewareFunc("capture", func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
		body, err := io.ReadAll(in.Request.(*smithyhttp.Request).GetStream())
		if err != nil {
			return middleware.FinalizeOutput{}, middleware.Metadata{}, err
		}
		*ctx.Value(captureKey{}).(*[]byte) = body
		return middleware.FinalizeOutput{}, middleware.Metadata{}, errCaptured
	})
	return localddb.NewClient("http://127.0.0.1:1", func(o *dynamodb.Options) {
		o.RetryMaxAttempts = 1
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Finalize.Add(capture, middleware.After)
		})
	})
})

// sdkBody returns the body the SDK sends for call.
func sdkBody(t testing.TB, call func(context.Context, *dynamodb.Client) error) []byte {
	t.Helper()
	var body []byte
	ctx := context.WithValue(context.Background(), captureKey{}, &body)
	if err := call(ctx, captureClient()); !errors.Is(err, errCaptured) {
		t.Fatalf("capturing the request: %v", err)
	}
	return body
}

type av = types.AttributeValue

// richItem has a value of every type, nested, and text the SDK escapes.
func richItem(pk string, blob int) map[string]av {
	return map[string]av{
		"pk":   &types.AttributeValueMemberS{Value: pk},
		"sk":   &types.AttributeValueMemberN{Value: "-12.50"},
		"data": &types.AttributeValueMemberB{Value: []byte(strings.Repeat("\x00\xffdata", blob))},
		"text": &types.AttributeValueMemberS{Value: "é 🙂 \"quoted\" \\ \n\t <&> \u2028"},
		"ok":   &types.AttributeValueMemberBOOL{Value: true},
		"none": &types.AttributeValueMemberNULL{Value: true},
		"sets": &types.AttributeValueMemberM{Value: map[string]av{
			"ss": &types.AttributeValueMemberSS{Value: []string{"a", "b"}},
			"ns": &types.AttributeValueMemberNS{Value: []string{"1", "2.5"}},
			"bs": &types.AttributeValueMemberBS{Value: [][]byte{{1}, {}}},
		}},
		"list": &types.AttributeValueMemberL{Value: []av{
			&types.AttributeValueMemberL{},
			&types.AttributeValueMemberM{Value: map[string]av{}},
			&types.AttributeValueMemberN{Value: "3"},
		}},
	}
}

// sdkBodies are requests and answers as the SDK and the servers write them.
func sdkBodies(t testing.TB) map[string][]byte {
	put := sdkBody(t, func(ctx context.Context, c *dynamodb.Client) error {
		_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: richItem("k1", 3), ReturnValues: types.ReturnValueAllOld})
		return err
	})
	get := sdkBody(t, func(ctx context.Context, c *dynamodb.Client) error {
		_, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), ConsistentRead: aws.Bool(true), Key: map[string]av{
			"pk": &types.AttributeValueMemberS{Value: "k1"}, "sk": &types.AttributeValueMemberN{Value: "1"}}})
		return err
	})
	batch := sdkBody(t, func(ctx context.Context, c *dynamodb.Client) error {
		var reqs []types.WriteRequest
		for i := range 5 {
			reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: richItem(fmt.Sprint("k", i), 100*i)}})
		}
		reqs = append(reqs, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: map[string]av{
			"pk": &types.AttributeValueMemberS{Value: "gone"}, "sk": &types.AttributeValueMemberN{Value: "7"}}}})
		_, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{
			RequestItems:           map[string][]types.WriteRequest{"t": reqs, "u": reqs[:2], "unknown": reqs[:1]},
			ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
		})
		return err
	})
	// Answers: the item as the SDK writes it is the item as servers write it.
	var p struct{ Item json.RawMessage }
	if err := json.Unmarshal(put, &p); err != nil {
		t.Fatal(err)
	}
	it := string(p.Item)
	return map[string][]byte{
		"PutItem":        put,
		"GetItem":        get,
		"BatchWriteItem": batch,
		"GetItem answer": []byte(`{"Item":` + it + `}`),
		"Query answer":   []byte(`{"Count":2,"Items":[` + it + `,` + it + `],"ScannedCount":2}`),
		"BatchGetItem answer": []byte(`{"Responses":{"t":[` + it + `],"u":[]},"UnprocessedKeys":{"t":{"Keys":[{"pk":{"S":"k9"}}],` +
			`"ConsistentRead":true}},"ConsumedCapacity":[{"TableName":"t","CapacityUnits":1.5}]}`),
	}
}

func TestFastWireTakesSDKBodies(t *testing.T) {
	bodies := sdkBodies(t)
	for name, b := range bodies {
		if _, err := parseJSON(b); err != nil {
			t.Errorf("%s: parseJSON: %v", name, err)
		}
	}
	src := bodies["PutItem"]
	root, _ := parseJSON(src)
	in, err := itemOpAt(src, root)
	if err != nil {
		t.Fatalf("itemOpAt(PutItem): %v", err)
	}
	n, _ := parseJSON(in.Item)
	if _, err := itemOf(in.Item, n); err != nil {
		t.Errorf("itemOf(the SDK's item): %v", err)
	}
	src = bodies["GetItem"]
	root, _ = parseJSON(src)
	if _, err := itemOpAt(src, root); err != nil {
		t.Errorf("itemOpAt(GetItem): %v", err)
	}
	c := &call{op: "BatchWriteItem", body: bodies["BatchWriteItem"]}
	if err := c.parseBatchWriteFast(testSchemas); err != nil {
		t.Errorf("parseBatchWriteFast: %v", err)
	}
	for _, name := range []string{"GetItem answer", "Query answer"} {
		src := bodies[name]
		root, _ := parseJSON(src)
		if _, err := readOutputAt(src, root); err != nil {
			t.Errorf("readOutputAt(%s): %v", name, err)
		}
	}
	src = bodies["BatchGetItem answer"]
	root, _ = parseJSON(src)
	if _, _, err := batchGetOutputAt(src, root); err != nil {
		t.Errorf("batchGetOutputAt: %v", err)
	}
	for name, b := range bodies {
		checkFastWire(t, name, b)
	}
}

// testSchemas knows tables t and u, keyed pk and sk.
func testSchemas(table string) (*tableSchema, bool) {
	if table != "t" && table != "u" {
		return nil, false
	}
	return &tableSchema{pk: "pk", sk: "sk"}, true
}

// checkFastWire compares every fast reader with its reference on b.
func checkFastWire(t *testing.T, name string, b []byte) {
	t.Helper()
	if _, err := parseJSON(b); err == nil && !json.Valid(b) {
		t.Errorf("%s: parseJSON accepts invalid JSON %q", name, b)
	}

	item, err := decodeItem(b)
	want, wantErr := decodeItemJSON(b)
	if (err == nil) != (wantErr == nil) {
		t.Errorf("%s: decodeItem error %v, encoding/json's %v", name, err, wantErr)
	} else if got, w := renderItem(item), renderItem(want); err == nil && got != w {
		t.Errorf("%s: decodeItem = %s, encoding/json's %s", name, got, w)
	}

	in, ok := readItemOp(b)
	var wantIn itemOpInput
	wantOK := json.Unmarshal(b, &wantIn) == nil
	if ok != wantOK || ok && !cmp.Equal(in, wantIn) {
		t.Errorf("%s: readItemOp = %+v, %v; encoding/json's %+v, %v", name, in, ok, wantIn, wantOK)
	}

	out, ok := readReadOutput(b)
	var wantOut readOutput
	wantOK = json.Unmarshal(b, &wantOut) == nil
	if ok != wantOK || ok && !cmp.Equal(out, wantOut) {
		t.Errorf("%s: readReadOutput = %+v, %v; encoding/json's %+v, %v", name, out, ok, wantOut, wantOK)
	}

	top, bg, ok := readBatchGetOutput(b)
	var wantTop map[string]json.RawMessage
	var wantBG batchGetOutput
	wantOK = json.Unmarshal(b, &wantTop) == nil && json.Unmarshal(b, &wantBG) == nil
	if ok != wantOK || ok && (!cmp.Equal(top, wantTop) || !cmp.Equal(bg, wantBG)) {
		t.Errorf("%s: readBatchGetOutput = %v, %+v, %v; encoding/json's %v, %+v, %v", name, top, bg, ok, wantTop, wantBG, wantOK)
	}

	fast := &call{op: "BatchWriteItem", body: b}
	fast.parseBatchWrite(testSchemas)
	ref := &call{op: "BatchWriteItem", body: b}
	ref.parseBatchWriteJSON(testSchemas)
	if diff := cmp.Diff(ref, fast, cmp.AllowUnexported(call{}, entry{}, pkey{}, itemWrite{}),
		cmpopts.IgnoreFields(call{}, "schemas")); diff != "" {
		t.Errorf("%s: parseBatchWrite differs from encoding/json's (-json +fast):\n%s", name, diff)
	}
}

// renderItem renders an item canonically, telling nil from empty.
func renderItem(m map[string]av) string {
	if m == nil {
		return "nil"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteString("{")
	for _, k := range keys {
		fmt.Fprintf(&b, "%q:%s,", k, render(m[k]))
	}
	return b.String() + "}"
}

func render(v av) string {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return "S" + strconv.Quote(v.Value)
	case *types.AttributeValueMemberN:
		return "N" + strconv.Quote(v.Value)
	case *types.AttributeValueMemberB:
		return fmt.Sprintf("B%q/%v", v.Value, v.Value == nil)
	case *types.AttributeValueMemberBOOL:
		return fmt.Sprint("BOOL", v.Value)
	case *types.AttributeValueMemberNULL:
		return fmt.Sprint("NULL", v.Value)
	case *types.AttributeValueMemberSS:
		return fmt.Sprintf("SS%q/%v", v.Value, v.Value == nil)
	case *types.AttributeValueMemberNS:
		return fmt.Sprintf("NS%q/%v", v.Value, v.Value == nil)
	case *types.AttributeValueMemberBS:
		return fmt.Sprintf("BS%q/%v", v.Value, v.Value == nil)
	case *types.AttributeValueMemberM:
		return "M" + renderItem(v.Value)
	case *types.AttributeValueMemberL:
		parts := make([]string, len(v.Value))
		for i, e := range v.Value {
			parts[i] = render(e)
		}
		return fmt.Sprintf("L[%s]/%v", strings.Join(parts, ","), v.Value == nil)
	case nil:
		return "nil"
	}
	return fmt.Sprintf("%T", v)
}

// oddBodies are valid and invalid inputs outside the plain shape, each
// of which the fast readers must hand to encoding/json or read alike.
var oddBodies = []string{
	`{"RequestItems":{"t":[{"PutRequest":{"Item":{"pk":{"S":"a"},"sk":{"N":"1"},"pk":{"S":"b"}}}}]}}`,
	`{"RequestItems":{"t":[{"PutRequest":{"Item":{"pk":{"Q":1},"pk":{"S":"b"},"sk":{"N":"1"}}}}]}}`,
	`{"RequestItems":{"t":[{"putrequest":{"Item":{"pk":{"S":"a"},"sk":{"N":"1"}}}}]}}`,
	`{"RequestItems":{"t":[{"PutRequest":{"item":{"pk":{"S":"a"},"sk":{"N":"1"}}}}]}}`,
	`{"RequestItems":{"t":[{"PutRequest":null,"DeleteRequest":{"Key":{"pk":{"S":"a"},"sk":{"N":"1"}}}}]}}`,
	`{"RequestItems":{"t":[{"PutRequest":{"Item":null}}]}}`,
	`{"RequestItems":{"t":[{"PutRequest":{}}, {}, [], 5, {"DeleteRequest":{"Key":{"pk":{"S":"a"}}}}]}}`,
	`{"RequestItems":{"t":null,"u":[]}}`,
	`{"RequestItems":null}`,
	`{"RequestItems":{"t":[{"PutRequest":{"Item":{"pk":{"S":"\u0061"},"sk":{"N":"1"}}}}]}}`,
	`{"RequestItems":{"\u0074":[{"PutRequest":{"Item":{"pk":{"S":"a"},"sk":{"N":"1"}}}}]}}`,
	`{"RequestItems":{"t":[{"PutRequest":{"Item":{"pk":{"S":"a\xffb"},"sk":{"N":"1"},"b":{"B":"AA=="},"bb":{"B":"A"}}}}]}}`,
	`{"RequestItems":{"t":[{"PutRequest":{"Item":{"pk":{"B":"AAE="},"sk":{"N":"01.0"},"x":{"B":null},"y":{"SS":null},"z":{"L":null}}}}]}}`,
	`{"RequestItems":{"t":[{"PutRequest":{"Item":{"pk":{"S":"a"},"sk":{"N":"1"},"m":{"M":{"a":{"S":"x","N":"1"}}}}}}]}}`,
	`{"RequestItems":{"t":[{"PutRequest":{"Item":{"pk":{"S":"a"},"sk":{"N":"1"},"e":{"BS":["AA==","!"]},"n":{"NULL":false}}}}]}}`,
	`{"RequestItems":{"t":[]}, "RequestItems":{"u":[]}}`,
	`{"TableName":"t","Item":{"pk":{"S":"a"},"sk":{"N":"1"}},"ConsistentRead":null,"tablename":"u"}`,
	`{"TableName":"t","Key":{"pk":{"S":"a"}},"ConsistentRead":1}`,
	`{"TableName":null,"Key":[]}`,
	`{"Item":null,"Items":[{"pk":{"S":"a"}},null,5]}`,
	`{"Responses":{"t":null},"UnprocessedKeys":{"t":{"Keys":null,"keys":[]}}}`,
	`{"Responses":{"t":[{"pk":{"S":"a"}}]},"UnprocessedKeys":{"t":{"Keys":[{"pk":{"S":"b"}}],"ProjectionExpression":"pk"}}}`,
	`{"a":{"S":"x"}} `, ` {"a": {"S" : "x" } }`, `{"a":{"S":"x"}}x`, `{"a":{"S":"x"},}`, `{"a":{"S":"x"}`,
	`{"a":{"N":-1.5e+3}}`, `{"a":{"N":"1"}, "b":{"BOOL":"true"}}`, `{"a":{"S":"\ud800"}}`, `{"a":{"S":"\x01"}}`,
	`{"a":{"L":[{"S":"x"},{"L":[{"M":{"b":{"S":"y"}}}]}]}}`, `{"a":{"S":"x"}}` + strings.Repeat(" ", 3),
	strings.Repeat(`{"a":{"M":`, maxDepth) + `{}` + strings.Repeat(`}}`, maxDepth),
	`[]`, `null`, `{}`, ``, `"x"`, `-0.0e-0`, `01`, `1.`, `tru`, `{"a":"\u00"}`,
}

func TestFastWireOddBodies(t *testing.T) {
	for i, b := range oddBodies {
		checkFastWire(t, fmt.Sprintf("odd body %d", i), []byte(b))
	}
}

func FuzzFastWire(f *testing.F) {
	for _, b := range sdkBodies(f) {
		f.Add(b)
	}
	for _, b := range oddBodies {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkFastWire(t, "fuzzed", b)
	})
}

// TestRawJSON checks that the bodies the proxy rewrites hold what
// json.Marshal would have written.
func TestRawJSON(t *testing.T) {
	raws := map[string][]json.RawMessage{
		"t":        {json.RawMessage(`{"PutRequest":{"Item":{"pk":{"S":"a <&>"}}}}`), json.RawMessage(` 1 `)},
		"u <&> \"": {},
		"v":        nil,
	}
	objs := map[string]map[string]json.RawMessage{
		"t": {"Keys": json.RawMessage(`[{"pk":{"S":"a"}}]`), "ConsistentRead": json.RawMessage(`true`), "nil": nil},
		"u": {},
	}
	for name, tc := range map[string]struct {
		got  json.RawMessage
		want any
	}{
		"rawArrays":  {rawArrays(raws), raws},
		"rawObjects": {rawObjects(objs), objs},
		"rawArray":   {rawArray(raws["t"]), raws["t"]},
		"rawObject":  {rawObject(objs["t"]), objs["t"]},
	} {
		want, err := json.Marshal(tc.want)
		if err != nil {
			t.Fatal(err)
		}
		var got, wantV any
		if err := json.Unmarshal(tc.got, &got); err != nil {
			t.Fatalf("%s: %q is not JSON: %v", name, tc.got, err)
		}
		if err := json.Unmarshal(want, &wantV); err != nil {
			t.Fatal(err)
		}
		if !cmp.Equal(got, wantV) {
			t.Errorf("%s = %s, want %s", name, tc.got, want)
		}
	}
}

// TestJSONStrings puts each byte that ends or spoils a run of plain
// characters at every offset of the parser's eight-byte steps.
func TestJSONStrings(t *testing.T) {
	for _, c := range []string{`"`, `\\`, `\"`, `\u00e9`, "\x00", "\x1f", "\x7f", "\x80", "\xc3\xa9", "\xff", `\`, `\x`} {
		for pos := range 18 {
			s := strings.Repeat("a", pos) + c + strings.Repeat("b", 17-pos)
			b := []byte(`{"a":{"S":"` + s + `"},"b":{"B":"` + s + `"}}`)
			checkFastWire(t, fmt.Sprintf("%q at %d", c, pos), b)
			_, err := parseJSON(b)
			if valid := json.Valid(b); (err == nil) != valid {
				t.Errorf("%q at %d: parseJSON error %v, json.Valid %v", c, pos, err, valid)
			}
		}
	}
}
