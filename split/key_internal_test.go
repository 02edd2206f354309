package split

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TestPlain: an N key's value in the form DynamoDB returns numbers. The
// pairs from 1E+3 to -0 and the 38-digit one were read back so from
// DynamoDB Local 1.25.1 and dynalite 4.0.0.
func TestPlain(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"21", "21"}, {"21.0", "21"}, {"2.1E1", "21"}, {"2.1e+1", "21"}, {"021", "21"}, {"210E-1", "21"},
		{"1E+3", "1000"}, {"1E+30", "1000000000000000000000000000000"},
		{"1.5E-7", "0.00000015"}, {"-0.00012", "-0.00012"}, {"0.000", "0"}, {"-0", "0"},
		{"123.456", "123.456"}, {"1.23456E2", "123.456"}, {"-5", "-5"},
		{"12345678901234567890123456789012345678", "12345678901234567890123456789012345678"},
	} {
		if got := plain(tc.in, types.ScalarAttributeTypeN); got != tc.want {
			t.Errorf("plain(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := plain("021", types.ScalarAttributeTypeS); got != "021" {
		t.Errorf("plain of an S value = %q, want it unchanged", got)
	}
}
