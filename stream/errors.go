package stream

import "github.com/dynashard/dynashard/internal/errs"

// Errors, matched with errors.Is. ErrInvalid and ErrNotFound are the
// families every dynashard package shares: errors.Is(err,
// stream.ErrInvalid) and errors.Is(err, shard.ErrInvalid) are the same
// test.
var (
	// ErrInvalid is matched by every error about input rejected before any
	// request: a nil client or function, an empty or malformed stream ARN,
	// a bad option, a checkpoint that does not parse or names another
	// stream.
	ErrInvalid = errs.Invalid
	// ErrNotFound reports a stream or a table that does not exist. The
	// SDK's *types.ResourceNotFoundException is wrapped with it.
	ErrNotFound = errs.NotFound

	// ErrInvalidCheckpoint is matched by the error of a checkpoint that
	// does not parse, or that names another stream than the Poller's.
	ErrInvalidCheckpoint = errs.New("stream: invalid checkpoint", errs.Invalid)

	// ErrNoStreams reports that there is no stream to read: the server has
	// no DynamoDB Streams API (dynalite has none; DynamoDB Local and
	// DynamoDB have it), or the table has no stream enabled. The error
	// names the endpoint or the table.
	ErrNoStreams = errs.New("stream: no DynamoDB stream", nil)

	// ErrTrimmed reports that records after a checkpoint are gone:
	// DynamoDB keeps a stream's records for 24 hours. The error names the
	// shard and the checkpoint's sequence number. PollerOptions.SkipTrimmed
	// goes on from the oldest record left instead.
	ErrTrimmed = errs.New("stream: records after the checkpoint were trimmed", nil)
)
