package integrationtest

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	smithymw "github.com/aws/smithy-go/middleware"
)

// errPartPanic is what the client below panics with.
var errPartPanic = errors.New("client panicked in UploadPart")

// panicOnPart makes a real client panic when it sends UploadPart's part
// number 2, on one of Put's upload goroutines.
func panicOnPart(o *s3.Options) {
	o.APIOptions = append(o.APIOptions, func(st *smithymw.Stack) error {
		return st.Initialize.Add(smithymw.InitializeMiddlewareFunc("panicOnPart",
			func(ctx context.Context, in smithymw.InitializeInput, next smithymw.InitializeHandler) (smithymw.InitializeOutput, smithymw.Metadata, error) {
				if p, ok := in.Parameters.(*s3.UploadPartInput); ok && middleware.GetOperationName(ctx) == "UploadPart" && *p.PartNumber == 2 {
					panic(errPartPanic)
				}
				return next.HandleInitialize(ctx, in)
			}), smithymw.Before)
	})
}

// TestPutPanicRaised: a panic on an upload goroutine reaches Put's caller
// as a panic it can recover (the process does not die), matching the value
// the client panicked with; the upload ends (no goroutine is left, which
// TestMain checks) and no object is stored.
func TestPutPanicRaised(t *testing.T) {
	s := s3Server(t)
	c := newS3Client(s.Endpoint, panicOnPart)
	bucket := "dynashard-test-panic"
	if _, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
		t.Fatal(err)
	}
	b := (&env{bucket: bucket}).blob(t, c)
	var got any
	func() {
		defer func() { got = recover() }()
		err := b.Put(context.Background(), "obj", bytes.NewReader(make([]byte, 3*(8<<20)+1)), nil)
		t.Errorf("Put returned %v; want a panic", err)
	}()
	err, ok := got.(error)
	if !ok || !errors.Is(err, errPartPanic) {
		t.Fatalf("recovered %v (%T); want an error matching %v", got, got, errPartPanic)
	}
	if _, err := b.Metadata(context.Background(), "obj"); err == nil {
		t.Fatal("the object exists after a Put that panicked")
	}
}
