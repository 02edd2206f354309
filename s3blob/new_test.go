package s3blob_test

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/chunk"
	"github.com/dynashard/dynashard/s3blob"
)

// TestNew rejects what no Bucket can work with, before any request.
func TestNew(t *testing.T) {
	c := s3.New(s3.Options{Region: "us-east-1"})
	for name, f := range map[string]func() error{
		"nil client":    func() error { _, err := s3blob.New(nil, "b"); return err },
		"typed nil":     func() error { _, err := s3blob.New((*s3.Client)(nil), "b"); return err },
		"empty bucket":  func() error { _, err := s3blob.New(c, ""); return err },
		"small part":    func() error { _, err := s3blob.New(c, "b", func(o *s3blob.Options) { o.PartSize = 1 }); return err },
		"negative conc": func() error { _, err := s3blob.New(c, "b", func(o *s3blob.Options) { o.Concurrency = -1 }); return err },
		"typed nil Objects": func() error {
			_, err := chunk.New(dynamodb.New(dynamodb.Options{}), "p", "c", func(o *chunk.Options) { o.Objects = (*s3blob.Bucket)(nil) })
			return err
		},
		"huge threshold": func() error {
			_, err := chunk.New(dynamodb.New(dynamodb.Options{}), "p", "c", func(o *chunk.Options) { o.ObjectThreshold = 1 << 40 })
			return err
		},
	} {
		if err := f(); !errors.Is(err, dynashard.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}
