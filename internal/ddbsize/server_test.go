package ddbsize

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/localddb"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }

// fill returns base plus an attribute "pad" whose S value makes ItemSize
// exactly size, built from the runes of unit (ASCII topped up at the end).
func fill(t *testing.T, base item, size int, unit string) item {
	t.Helper()
	it := item{"pad": s("")}
	for k, v := range base {
		it[k] = v
	}
	cur, err := ItemSize(it)
	if err != nil {
		t.Fatal(err)
	}
	need := size - cur
	if need < 0 {
		t.Fatalf("base item already %d bytes, want at most %d", cur, size)
	}
	var sb strings.Builder
	sb.WriteString(strings.Repeat(unit, need/len(unit)))
	sb.WriteString(strings.Repeat("x", need%len(unit)))
	it["pad"] = s(sb.String())
	if got, err := ItemSize(it); err != nil || got != size {
		t.Fatalf("fill: got %d, %v, want %d", got, err, size)
	}
	return it
}

func isValidation(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "ValidationException"
}

// TestServerItemSizeLimit proves the server accepts an item of exactly
// MaxItemSize bytes as ItemSize counts them and rejects one byte more, for
// items mixing every type, and for each number shape the size formula
// distinguishes.
func TestServerItemSizeLimit(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		ctx := context.Background()
		c := srv.Client()
		table := srv.Table(t, "pk:S")
		put := func(it item) error {
			_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: it})
			return err
		}
		mixed := item{
			"n": n("-123.456"), "b": b([]byte{1, 2, 3}), "t": boolv(true), "z": null(),
			"l": l(s("a"), n("7"), m(item{"k": s("v")})), "ss": ss("x", "yy"), "ns": ns("1", "22", "-0.5"), "bs": bs([]byte{4}, []byte{5, 6}),
		}
		type tc struct {
			name string
			unit string // the rune the padding is made of
			base item
		}
		cases := []tc{
			{"ascii", "x", item{}},
			{"mixed types", "x", mixed},
		}
		for _, num := range []string{"0", "1", "-1", "12", "-12", "123", "1.5", "15", "0.05", "100", "1E+125", "1E-130",
			"-9.9999999999999999999999999999999999999E+125", "12345678901234567890123456789012345678", "0.1234567890123456789012345678901234567"} {
			cases = append(cases, tc{"number " + num, "x", item{"num": n(num)}})
		}
		// dynalite measures strings in UTF-16 code units ("🙂" is 2, not 4
		// bytes; "日" is 1, not 3), so it accepts multi-byte items DynamoDB
		// rejects. Those cases run against DynamoDB Local, whose sizes are
		// the service's.
		if srv.Kind != localddb.Dynalite {
			cases = append(cases,
				tc{"2-byte utf8", "é", item{"é": s("ü")}},
				tc{"3-byte utf8", "日", item{"名前": m(item{"日": s("本")})}},
				tc{"4-byte utf8", "🙂", mixed},
			)
		}
		for i, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				base := item{"pk": s(fmt.Sprintf("k%d", i))}
				for k, v := range tc.base {
					base[k] = v
				}
				if err := put(fill(t, base, MaxItemSize, tc.unit)); err != nil {
					t.Errorf("PutItem of %d bytes: got %v, want success", MaxItemSize, err)
				}
				over := fill(t, base, MaxItemSize+1, tc.unit)
				if _, err := CheckItem(over); !errors.Is(err, ErrItemTooLarge) {
					t.Errorf("CheckItem(%d bytes): got %v, want ErrItemTooLarge", MaxItemSize+1, err)
				}
				if err := put(over); !isValidation(err) {
					t.Errorf("PutItem of %d bytes: got %v, want ValidationException", MaxItemSize+1, err)
				}
			})
		}
	})
}

// TestServerRejectsWhatItemSizeRejects proves each value ItemSize or
// CheckKeyValue refuses is one the server refuses too, so nothing the
// checks stop would have been accepted.
func TestServerRejectsWhatItemSizeRejects(t *testing.T) {
	deep := l()
	for range MaxDepth - 1 {
		deep = l(deep)
	}
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		ctx := context.Background()
		c := srv.Client()
		table := srv.Table(t, "pk:S", "sk:B")
		key := func(i int) item { return item{"pk": s(fmt.Sprint("r", i)), "sk": b([]byte{1})} }
		for i, tc := range []struct {
			name string
			attr item
		}{
			{"39 digits", item{"a": n(strings.Repeat("9", 39))}},
			{"below 1E-130", item{"a": n("9.9E-131")}},
			{"above 9.99E+125", item{"a": n("1E+126")}},
			{"bad number", item{"a": n("1.2.3")}},
			{"empty SS", item{"a": ss()}},
			{"duplicate SS", item{"a": ss("x", "x")}},
			{"duplicate NS by value", item{"a": ns("1", "1.0")}},
			{"NULL false", item{"a": &types.AttributeValueMemberNULL{}}},
			{"empty name", item{"": s("x")}},
			{"too deep", item{"a": deep}},
			{"nested empty name", item{"a": m(item{"": s("x")})}},
			{"plus sign", item{"a": n("+1")}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				switch {
				case srv.Kind == localddb.Dynalite && (tc.name == "too deep" || tc.name == "empty name" || tc.name == "nested empty name"):
					t.Skip("dynalite does not check nesting depth or empty attribute names")
				case srv.Kind == localddb.DynamoDBLocal && tc.name == "plus sign":
					t.Skip("DynamoDB Local accepts a leading +; dynalite, modelled on the service, refuses it")
				}
				it := key(i)
				for k, v := range tc.attr {
					it[k] = v
				}
				if _, err := ItemSize(it); err == nil {
					t.Fatalf("ItemSize accepted %v", tc.attr)
				}
				_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: it})
				if !isValidation(err) {
					t.Errorf("PutItem: got %v, want ValidationException", err)
				}
			})
		}
		for i, tc := range []struct {
			name string
			key  item
		}{
			{"empty pk", item{"pk": s(""), "sk": b([]byte{1})}},
			{"empty sk", item{"pk": s("a"), "sk": b([]byte{})}},
			{"pk too long", item{"pk": s(strings.Repeat("é", MaxPartitionKeyBytes/2) + "x"), "sk": b([]byte{1})}},
			{"sk too long", item{"pk": s("a"), "sk": b(make([]byte, MaxSortKeyBytes+1))}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if srv.Kind == localddb.Dynalite && tc.name == "pk too long" {
					// dynalite counts the UTF-16 length (1025 units) and accepts it.
					t.Skip("dynalite measures key strings in UTF-16 units")
				}
				if CheckKeyValue("pk", tc.key["pk"], false) == nil && CheckKeyValue("sk", tc.key["sk"], true) == nil {
					t.Fatalf("CheckKeyValue accepted %v", tc.key)
				}
				it := item{"v": s(fmt.Sprint(i))}
				for k, v := range tc.key {
					it[k] = v
				}
				_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: it})
				if !isValidation(err) {
					t.Errorf("PutItem: got %v, want ValidationException", err)
				}
			})
		}
		// And the limits themselves are accepted.
		deepOK := s("x")
		for range MaxDepth - 1 {
			deepOK = m(item{"k": deepOK})
		}
		ok := item{"pk": s(strings.Repeat("é", MaxPartitionKeyBytes/2)), "sk": b(make([]byte, MaxSortKeyBytes)), "e": s(""), "eb": b([]byte{}),
			"deep": deepOK, "sets": l(ss("", "a"), bs([]byte{}, []byte{1}))}
		if _, err := ItemSize(ok); err != nil {
			t.Fatal(err)
		}
		if CheckKeyValue("pk", ok["pk"], false) != nil || CheckKeyValue("sk", ok["sk"], true) != nil {
			t.Fatalf("CheckKeyValue rejected keys at the limit")
		}
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: ok}); err != nil {
			t.Errorf("PutItem with keys at the limits, empty non-key values, deepest nesting: %v", err)
		}
	})
}
