package dynashard

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/aws/smithy-go"

	"github.com/dynashard/dynashard/internal/backoff"
)

// throttledRetryAfter is the wait HTTPStatus gives a throttled call: one
// second, the span DynamoDB measures capacity over.
const throttledRetryAfter = time.Second

// HTTPStatus returns the HTTP status an HTTP handler answers with when a
// dynashard call (of any package) fails with err. A throttled call also
// gets retryAfter, the wait to send as a Retry-After header; it is zero
// for every other status. The first rule that matches wins:
//
//   - nil: 200 OK.
//   - ErrInvalid: 400 Bad Request. The input was refused before any
//     request.
//   - ErrNotFound: 404 Not Found.
//   - ErrConflict: 409 Conflict. A version or condition did not hold.
//   - A server without transactions (shard.ErrNoTransactions,
//     split.ErrNoTransactions: both wrap the server's
//     UnknownOperationException): 501 Not Implemented.
//   - Throttling the SDK's retries did not ride out
//     (ProvisionedThroughputExceededException, ThrottlingException and
//     the others the SDK classifies so): 503 Service Unavailable, with
//     a retryAfter of 1 s, the span DynamoDB measures capacity over.
//   - A deadline passed (shard.ErrTooLate, which wraps
//     context.DeadlineExceeded, or the request's own): 504 Gateway
//     Timeout. Such a write may or may not have been applied.
//   - Anything else: 500 Internal Server Error.
//
// It reads err only with errors.Is and errors.As, so errors wrapped
// further by the caller map alike.
func HTTPStatus(err error) (status int, retryAfter time.Duration) {
	var ae smithy.APIError
	switch {
	case err == nil:
		return http.StatusOK, 0
	case errors.Is(err, ErrInvalid):
		return http.StatusBadRequest, 0
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound, 0
	case errors.Is(err, ErrConflict):
		return http.StatusConflict, 0
	case errors.As(err, &ae) && ae.ErrorCode() == "UnknownOperationException":
		return http.StatusNotImplemented, 0
	case backoff.IsThrottle(err):
		return http.StatusServiceUnavailable, throttledRetryAfter
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout, 0
	}
	return http.StatusInternalServerError, 0
}
