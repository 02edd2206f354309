// Package chunkhook lets tests outside package chunk (those of module
// s3blob, which cannot live in package chunk without bringing the S3 SDK
// into the library's go.mod) reach chunk's test hooks. Package chunk sets
// the functions at init; production code never calls them.
package chunkhook

import "time"

// SetClock replaces the clock of a *chunk.Store (passed as any), as
// chunk's own tests do to age versions past Options.Grace. Set it before
// the Store is used.
var SetClock func(store any, now func() time.Time)
