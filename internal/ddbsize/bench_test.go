package ddbsize

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

func benchItem(size int) item {
	return item{
		"pk":    s("user#000123"),
		"sk":    n("1700000000.125"),
		"name":  s("Zoë Müller"),
		"tags":  ss("a", "bb", "ccc"),
		"attrs": m(item{"n": n("-12.5"), "l": l(s("x"), boolv(true), null())}),
		"body":  s(strings.Repeat("lorem ipsum ", size/12)),
		"blob":  b(make([]byte, size/4)),
	}
}

// BenchmarkSize compares ItemSize and WireSize with the baseline they
// replace: serializing the item with the SDK and measuring the bytes.
func BenchmarkSize(b *testing.B) {
	for _, size := range []int{100, 4 << 10, 100 << 10} {
		it := benchItem(size)
		b.Run(fmt.Sprintf("ItemSize/item=%dB", size), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ItemSize(it); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("WireSize/item=%dB", size), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				WireSize(it)
			}
		})
		b.Run(fmt.Sprintf("SDKSerialize/item=%dB", size), func(b *testing.B) {
			b.ReportAllocs()
			c := captureClient()
			for b.Loop() {
				var body []byte
				ctx := context.WithValue(context.Background(), captureKey{}, &body)
				_, _ = c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: it})
				if len(body) == 0 {
					b.Fatal("nothing captured")
				}
			}
		})
	}
}

func BenchmarkParseNumber(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := scanNumber("-1234567.891011e-12"); err != nil {
			b.Fatal(err)
		}
	}
}
