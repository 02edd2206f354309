package chunk

import (
	"errors"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// TestClassifyFlip pins what each kind of parent-update error says about
// the update's effect.
func TestClassifyFlip(t *testing.T) {
	status := func(code int, err error) error {
		return &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: code}}, Err: err}
	}
	tests := []struct {
		name string
		err  error
		want flipResult
	}{
		{"success", nil, flipApplied},
		{"condition failed", status(400, &types.ConditionalCheckFailedException{}), flipRefused},
		{"throttled", status(400, &types.ProvisionedThroughputExceededException{}), flipThrottled},
		{"validation", status(400, errors.New("ValidationException")), flipRejected},
		{"server fault", status(500, errors.New("InternalServerError")), flipUnknown},
		{"no response", errors.New("connection reset by peer"), flipUnknown},
	}
	for _, tt := range tests {
		if got := classifyFlip(tt.err); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}
