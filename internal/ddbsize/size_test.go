package ddbsize

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/dynashard/dynashard/internal/localddb"
)

type (
	av   = types.AttributeValue
	item = map[string]types.AttributeValue
)

func s(v string) av        { return &types.AttributeValueMemberS{Value: v} }
func n(v string) av        { return &types.AttributeValueMemberN{Value: v} }
func b(v []byte) av        { return &types.AttributeValueMemberB{Value: v} }
func boolv(v bool) av      { return &types.AttributeValueMemberBOOL{Value: v} }
func null() av             { return &types.AttributeValueMemberNULL{Value: true} }
func l(vs ...av) av        { return &types.AttributeValueMemberL{Value: vs} }
func m(v item) av          { return &types.AttributeValueMemberM{Value: v} }
func ss(v ...string) av    { return &types.AttributeValueMemberSS{Value: v} }
func ns(v ...string) av    { return &types.AttributeValueMemberNS{Value: v} }
func bs(v ...[]byte) av    { return &types.AttributeValueMemberBS{Value: v} }
func numSize(v string) int { x, _ := ParseNumber(v); return x.Size() }

func TestItemSize(t *testing.T) {
	for _, tc := range []struct {
		name string
		item item
		want int // spelled out as the guide's rules
	}{
		{"empty item", item{}, 0},
		{"ascii string", item{"name": s("value")}, len("name") + len("value")},
		{"empty string", item{"a": s("")}, 1},
		{"multi-byte string", item{"é": s("日本語🙂")}, len("é") + len("日本語🙂")},
		{"number", item{"n": n("12345")}, 1 + numSize("12345")},
		{"binary raw bytes", item{"b": b([]byte{0, 1, 2, 3, 4})}, 1 + 5},
		{"empty binary", item{"b": b([]byte{})}, 1},
		{"bool and null", item{"t": boolv(true), "f": boolv(false), "z": null()}, 3 * (1 + 1)},
		{"empty list", item{"l": l()}, 1 + 3},
		{"list", item{"l": l(s("ab"), n("1"), null())}, 1 + 3 + (1 + 2) + (1 + numSize("1")) + (1 + 1)},
		{"empty map", item{"m": m(item{})}, 1 + 3},
		{"map", item{"m": m(item{"xy": s("abc"), "z": boolv(true)})}, 1 + 3 + (1 + 2 + 3) + (1 + 1 + 1)},
		{"nested", item{"m": m(item{"l": l(m(item{"k": s("v")}))})}, 1 + 3 + (1 + 1 + 3 + (1 + 3 + (1 + 1 + 1)))},
		{"string set", item{"ss": ss("a", "bb", "ccc")}, 2 + 1 + 2 + 3},
		{"number set", item{"ns": ns("1", "-1.5", "100")}, 2 + numSize("1") + numSize("-1.5") + numSize("100")},
		{"binary set", item{"bs": bs([]byte{1}, []byte{1, 2})}, 2 + 1 + 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ItemSize(tc.item)
			if err != nil || got != tc.want {
				t.Errorf("ItemSize: got %d, %v, want %d", got, err, tc.want)
			}
		})
	}
}

func TestItemSizeRejects(t *testing.T) {
	// MaxDepth-1 nested lists hold a scalar at level MaxDepth; one more
	// list is refused even when empty.
	deep := s("x")
	for range MaxDepth - 1 {
		deep = l(deep)
	}
	tooDeep := l(deep)
	tooDeepEmpty := l()
	for range MaxDepth - 1 {
		tooDeepEmpty = m(item{"k": tooDeepEmpty})
	}
	for _, tc := range []struct {
		name string
		item item
		want error
		path string
	}{
		{"nil value", item{"a": nil}, ErrInvalidValue, "a"},
		{"unknown member", item{"a": &types.UnknownUnionMember{Tag: "X"}}, ErrInvalidValue, "a"},
		{"empty name", item{"": s("x")}, ErrInvalidValue, ""},
		{"bad utf8 name", item{"\xff": s("x")}, ErrInvalidValue, "\xff"},
		{"bad utf8 value", item{"a": s("ok\xffno")}, ErrInvalidValue, "a"},
		{"bad number", item{"a": n("1.2.3")}, ErrInvalidNumber, "a"},
		{"39 digits", item{"a": n(strings.Repeat("1", 39))}, ErrInvalidNumber, "a"},
		{"too small", item{"a": n("1E-131")}, ErrInvalidNumber, "a"},
		{"too big", item{"a": n("1E126")}, ErrInvalidNumber, "a"},
		{"nil binary", item{"a": b(nil)}, ErrInvalidValue, "a"},
		{"null false", item{"a": &types.AttributeValueMemberNULL{}}, ErrInvalidValue, "a"},
		{"empty SS", item{"a": ss()}, ErrInvalidValue, "a"},
		{"empty NS", item{"a": ns()}, ErrInvalidValue, "a"},
		{"empty BS", item{"a": bs()}, ErrInvalidValue, "a"},
		{"duplicate SS", item{"a": ss("x", "y", "x")}, ErrInvalidValue, "a[2]"},
		{"duplicate NS by value", item{"a": ns("1", "1.0")}, ErrInvalidValue, "a[1]"},
		{"duplicate big SS", item{"a": ss("1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "3")}, ErrInvalidValue, "a[10]"},
		{"duplicate BS", item{"a": bs([]byte{1}, []byte{1})}, ErrInvalidValue, "a[1]"},
		{"bad NS element", item{"a": ns("1", "x")}, ErrInvalidNumber, "a[1]"},
		{"nested path", item{"a": m(item{"b": l(s("ok"), n("nope"))})}, ErrInvalidNumber, "a.b[1]"},
		{"nested nil", item{"a": l(nil)}, ErrInvalidValue, "a[0]"},
		{"too deep", item{"a": tooDeep}, ErrInvalidValue, "a" + strings.Repeat("[0]", MaxDepth-1)},
		{"too deep empty", item{"a": tooDeepEmpty}, ErrInvalidValue, "a" + strings.Repeat(".k", MaxDepth-1)},
		{"plus sign", item{"a": n("+1")}, ErrInvalidNumber, "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ItemSize(tc.item)
			if !errors.Is(err, tc.want) {
				t.Fatalf("ItemSize: got %v, want %v", err, tc.want)
			}
			var ae *AttributeError
			if !errors.As(err, &ae) || ae.Path != tc.path {
				t.Errorf("ItemSize: got %#v, want *AttributeError with Path %q", err, tc.path)
			}
		})
	}
	if _, err := ItemSize(item{"a": deep}); err != nil {
		t.Errorf("ItemSize at depth %d: got %v, want nil", MaxDepth, err)
	}
}

func TestCheckItem(t *testing.T) {
	pad := func(size int) item {
		return item{"pk": s("k"), "p": s(strings.Repeat("x", size-len("pk")-len("k")-len("p")))}
	}
	if n, err := CheckItem(pad(MaxItemSize)); err != nil || n != MaxItemSize {
		t.Errorf("CheckItem(max): got %d, %v, want %d, nil", n, err, MaxItemSize)
	}
	n, err := CheckItem(pad(MaxItemSize + 1))
	var se *SizeError
	if !errors.Is(err, ErrItemTooLarge) || !errors.As(err, &se) || se.Size != MaxItemSize+1 || n != MaxItemSize+1 {
		t.Errorf("CheckItem(max+1): got %d, %v, want ErrItemTooLarge with size %d", n, err, MaxItemSize+1)
	}
}

func TestCheckKeyValue(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    av
		sort bool
		want error
	}{
		{"S", s("a"), false, nil},
		{"N", n("-1.5"), false, nil},
		{"B", b([]byte{0}), true, nil},
		{"pk S at limit", s(strings.Repeat("é", MaxPartitionKeyBytes/2)), false, nil},
		{"pk S over limit", s(strings.Repeat("é", MaxPartitionKeyBytes/2) + "x"), false, ErrInvalidKey},
		{"sk S at limit", s(strings.Repeat("x", MaxSortKeyBytes)), true, nil},
		{"sk S over limit", s(strings.Repeat("x", MaxSortKeyBytes+1)), true, ErrInvalidKey},
		{"pk B over limit", b(make([]byte, MaxPartitionKeyBytes+1)), false, ErrInvalidKey},
		{"sk B at limit", b(make([]byte, MaxSortKeyBytes)), true, nil},
		{"empty S", s(""), false, ErrInvalidKey},
		{"empty B", b([]byte{}), true, ErrInvalidKey},
		{"nil B", b(nil), false, ErrInvalidKey},
		{"bad N", n("x"), false, ErrInvalidNumber},
		{"bad utf8", s("\xff"), false, ErrInvalidKey},
		{"BOOL", boolv(true), false, ErrInvalidKey},
		{"SS", ss("a"), false, ErrInvalidKey},
		{"missing", nil, false, ErrInvalidKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckKeyValue("k", tc.v, tc.sort)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("CheckKeyValue: got %v, want %v", err, tc.want)
			}
			var ae *AttributeError
			if err != nil && (!errors.As(err, &ae) || ae.Path != "k") {
				t.Errorf("CheckKeyValue: got %#v, want *AttributeError naming k", err)
			}
		})
	}
}

type captureKey struct{}

var errCaptured = errors.New("captured")

// captureClient is a real SDK client whose requests stop after being
// serialized: the body goes to the *[]byte in the context, nothing is sent.
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
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Finalize.Add(capture, middleware.After)
		})
	})
})

// sdkItemJSON returns the exact bytes the AWS SDK writes for item in a PutItem
// request.
func sdkItemJSON(t testing.TB, it item) []byte {
	t.Helper()
	var body []byte
	ctx := context.WithValue(context.Background(), captureKey{}, &body)
	_, err := captureClient().PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: it})
	if !errors.Is(err, errCaptured) {
		t.Fatalf("capturing the request: %v", err)
	}
	var req struct{ Item json.RawMessage }
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("request body %q: %v", body, err)
	}
	return req.Item
}

func TestWireSizeMatchesSDK(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	fixed := []item{
		{},
		{"a": s("")},
		{"quote\"back\\slash": s("\n\r\t\x00\x1f\x7f \u2028\u2029 é 🙂 <&>")},
		{"invalid": s("a\xffb\xc3")},
		{"b": b(nil), "e": b([]byte{}), "x": b([]byte{1, 2, 3, 4})},
		{"t": boolv(true), "f": boolv(false), "n": null(), "nf": &types.AttributeValueMemberNULL{}},
		{"sets": m(item{"ss": ss("a", "\"b"), "ns": ns("1", "2.5"), "bs": bs([]byte{9}, []byte{})})},
		{"l": l(), "m": m(item{}), "deep": l(l(m(item{"k": l(n("1"))})))},
	}
	for _, it := range fixed {
		checkWire(t, it)
	}
	for range 300 {
		checkWire(t, randomItem(r, 3))
	}
}

func checkWire(t *testing.T, it item) {
	t.Helper()
	want := len(sdkItemJSON(t, it))
	if got := WireSize(it); got != want {
		t.Errorf("WireSize(%v): got %d, want %d (SDK bytes %s)", it, got, want, sdkItemJSON(t, it))
	}
}

func randomString(r *rand.Rand) string {
	alphabet := []string{"a", "Z", "0", " ", "\"", "\\", "\n", "\t", "\x01", "\x7f", "é", "日", "🙂", "\u2028", "\xff"}
	var sb strings.Builder
	for range r.IntN(12) {
		sb.WriteString(alphabet[r.IntN(len(alphabet))])
	}
	return sb.String()
}

func randomValue(r *rand.Rand, depth int) av {
	k := r.IntN(10)
	if depth <= 0 && k >= 8 {
		k = r.IntN(8)
	}
	switch k {
	case 0:
		return s(randomString(r))
	case 1:
		return n(randomNumber(r))
	case 2:
		bb := make([]byte, r.IntN(20))
		for i := range bb {
			bb[i] = byte(r.Uint32())
		}
		return b(bb)
	case 3:
		return boolv(r.IntN(2) == 0)
	case 4:
		return null()
	case 5:
		v := make([]string, r.IntN(4))
		for i := range v {
			v[i] = randomString(r)
		}
		return ss(v...)
	case 6:
		v := make([]string, r.IntN(4))
		for i := range v {
			v[i] = randomNumber(r)
		}
		return ns(v...)
	case 7:
		v := make([][]byte, r.IntN(4))
		for i := range v {
			v[i] = []byte(randomString(r))
		}
		return bs(v...)
	case 8:
		v := make([]av, r.IntN(4))
		for i := range v {
			v[i] = randomValue(r, depth-1)
		}
		return l(v...)
	default:
		return m(randomItem(r, depth-1))
	}
}

func randomItem(r *rand.Rand, depth int) item {
	it := item{}
	for range r.IntN(5) {
		it[randomString(r)] = randomValue(r, depth)
	}
	return it
}

// TestWireSizeNeverUnder pins the property the batch packer relies on for
// items ItemSize accepts: WireSize is at least the SDK's bytes.
func FuzzWireSize(f *testing.F) {
	f.Add("name", "value", []byte{1, 2}, "1.5")
	f.Add("\u2028", "\x00\"\\", []byte{}, "-0")
	f.Add("é", "\xff\xfe", []byte(nil), "1e5")
	f.Fuzz(func(t *testing.T, name, str string, bin []byte, num string) {
		it := item{name: s(str), name + "b": b(bin), name + "n": n(num), name + "l": l(s(str), ss(str, name))}
		want := len(sdkItemJSON(t, it))
		if got := WireSize(it); got != want {
			t.Errorf("WireSize: got %d, want %d", got, want)
		}
		size, err := ItemSize(it)
		if err == nil && size > WireSize(it) {
			// Every counted byte appears at least once on the wire.
			t.Errorf("ItemSize %d > WireSize %d", size, WireSize(it))
		}
		if err == nil && !utf8.ValidString(name+str) {
			t.Errorf("ItemSize accepted invalid UTF-8 %q %q", name, str)
		}
	})
}

// TestPlain8 checks the eight-byte fast path of jsonStringLen against the
// byte table, for every byte value at every position.
func TestPlain8(t *testing.T) {
	for pos := range 8 {
		for c := range 256 {
			w := []byte("abcdefgh")
			w[pos] = byte(c)
			want := c < utf8.RuneSelf && asciiExtra[c] == 0
			if got := plain8(binary.LittleEndian.Uint64(w)); got != want {
				t.Errorf("plain8(%q): got %v, want %v", w, got, want)
			}
			if got, want := jsonStringLen(string(w)+"ijklmnop"), len(sdkString(t, string(w)+"ijklmnop")); got != want {
				t.Errorf("jsonStringLen(%q): got %d, want %d", w, got, want)
			}
		}
	}
}

func sdkString(t *testing.T, v string) []byte {
	t.Helper()
	raw := sdkItemJSON(t, item{"a": s(v)})
	// {"a":{"S":<string>}}
	return raw[len(`{"a":{"S":`) : len(raw)-2]
}
