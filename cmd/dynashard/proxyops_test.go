package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestProxyOpsChecked: -ops takes DynamoDB operation names only. A typo
// (BatchWriteItems) is a usage error naming -ops and the closest
// operation, instead of a proxy that throttles nothing.
func TestProxyOpsChecked(t *testing.T) {
	for _, tc := range []struct{ ops, suggest string }{
		{"BatchWriteItems", "BatchWriteItem"},
		{"Query,PutItm", "PutItem"},
		{"query", "Query"},
		{"Bogus", ""},
	} {
		t.Run(tc.ops, func(t *testing.T) {
			_, err := parseProxy([]string{"-target", "http://127.0.0.1:8001", "-ops", tc.ops}, &bytes.Buffer{}, &bytes.Buffer{})
			if !errors.Is(err, errUsage) {
				t.Fatalf("got %v, want a usage error", err)
			}
			// The message is what the user reads: it must name the flag
			// and, when one is close, the operation meant.
			if msg := err.Error(); !strings.Contains(msg, "-ops") || !strings.Contains(msg, tc.suggest) {
				t.Errorf("got %q, want it to name -ops and %q", msg, tc.suggest)
			}
		})
	}
	for _, ops := range []string{"BatchWriteItem,Query", "TransactWriteItems", "DescribeTable, UpdateTimeToLive", ""} {
		if _, err := parseProxy([]string{"-target", "http://127.0.0.1:8001", "-ops", ops}, &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
			t.Errorf("-ops %q: %v", ops, err)
		}
	}
}
