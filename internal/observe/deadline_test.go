package observe_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/observe"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }

// pausedCtx is a ctx as a process sees it when it resumes after a pause
// past its deadline, before the ctx's timer has fired: the deadline is
// past, but Done is not closed and Err is nil.
type pausedCtx struct {
	context.Context
	deadline time.Time
}

func (c pausedCtx) Deadline() (time.Time, bool) { return c.deadline, true }

// TestDeadlineCheckedAsSent: a request whose deadline passed is not sent
// even when its ctx has not noticed yet; one within its deadline is.
func TestDeadlineCheckedAsSent(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		c := s.Client()
		name := s.Table(t, "pk:S")
		put := func(ctx context.Context, pk string) error {
			_, err := observe.Do(ctx, c.PutItem, &dynamodb.PutItemInput{TableName: aws.String(name),
				Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}}})
			return err
		}
		stale := pausedCtx{context.Background(), time.Now().Add(-time.Second)}
		if err := put(stale, "late"); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Put past its deadline: %v, want DeadlineExceeded", err)
		}
		live, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := put(live, "on time"); err != nil {
			t.Fatalf("Put within its deadline: %v", err)
		}
		for pk, want := range map[string]bool{"late": false, "on time": true} {
			out, err := c.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(name), ConsistentRead: aws.Bool(true),
				Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}}})
			if err != nil {
				t.Fatal(err)
			}
			if got := out.Item != nil; got != want {
				t.Errorf("item %q stored: %v, want %v", pk, got, want)
			}
		}
	})
}
