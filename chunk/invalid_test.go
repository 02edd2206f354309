package chunk

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/ddbsize"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/errs"
)

// noPanic runs f, turning a panic into an error.
func noPanic(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return f()
}

// failingMarshaler is a value attributevalue.MarshalMap cannot marshal.
type failingMarshaler struct{}

func (failingMarshaler) MarshalDynamoDBAttributeValue() (types.AttributeValue, error) {
	return nil, errors.New("cannot marshal")
}

// TestNew: New rejects, with an error matching ErrInvalid (the value every
// dynashard package shares), every client, table name and option it cannot
// work with, and never panics.
func TestNew(t *testing.T) {
	c := dynamodb.New(dynamodb.Options{})
	var typedNil *dynamodb.Client
	tests := []struct {
		name            string
		c               Client
		parents, chunks string
		opts            func(*Options)
	}{
		{"nil client", nil, "p", "c", nil},
		{"typed nil client", typedNil, "p", "c", nil},
		{"empty parents", c, "", "c", nil},
		{"empty chunks", c, "p", "", nil},
		{"same table", c, "t", "t", nil},
		{"ChunkKeyAttribute too long", c, "p", "c", func(o *Options) { o.ChunkKeyAttribute = strings.Repeat("k", 256) }},
		{"ChunkKeyAttribute not UTF-8", c, "p", "c", func(o *Options) { o.ChunkKeyAttribute = "\xff" }},
		{"negative ChunkSize", c, "p", "c", func(o *Options) { o.ChunkSize = -1 }},
		{"ChunkSize above an item", c, "p", "c", func(o *Options) { o.ChunkSize = ddbsize.MaxItemSize }},
		{"InlineLimit above an item", c, "p", "c", func(o *Options) { o.InlineLimit = ddbsize.MaxItemSize + 1 }},
		{"negative MaxSize", c, "p", "c", func(o *Options) { o.MaxSize = -1 }},
		{"huge MaxSize", c, "p", "c", func(o *Options) { o.MaxSize = math.MaxInt64 }},
		{"negative ReadAttempts", c, "p", "c", func(o *Options) { o.ReadAttempts = -1 }},
		{"negative Grace", c, "p", "c", func(o *Options) { o.Grace = -time.Second }},
		{"negative MaxConcurrency", c, "p", "c", func(o *Options) { o.MaxConcurrency = -1 }},
		{"unknown Compression", c, "p", "c", func(o *Options) { o.Compression = "lz4" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var st *Store
			err := noPanic(func() error {
				var err error
				st, err = New(tt.c, tt.parents, tt.chunks, tt.opts)
				return err
			})
			if !errors.Is(err, ErrInvalid) || !errors.Is(err, errs.Invalid) || st != nil {
				t.Errorf("got %v, %v; want nil and ErrInvalid", st, err)
			}
		})
	}
	if st, err := New(c, "p", "c", nil, func(o *Options) { o.InlineLimit = -1 }); err != nil || st.opts.InlineLimit != -1 {
		t.Errorf("nil option function and negative InlineLimit: got %v, want them accepted", err)
	}
}

// TestErrorFamilies: the package's own sentinels match the shared families.
func TestErrorFamilies(t *testing.T) {
	tests := []struct {
		err, family error
		want        bool
	}{
		{ErrInvalidKey, errs.Invalid, true},
		{ErrTooLarge, errs.Invalid, true},
		{ErrReserved, errs.Invalid, true},
		{ErrCorrupt, errs.Invalid, false},
		{ErrCorrupt, errs.NotFound, false},
		{&CorruptError{}, ErrCorrupt, true},
		{ErrNotFound, errs.NotFound, true},
		{ErrConflict, errs.Conflict, true},
		{ErrInvalid, errs.Invalid, true},
	}
	for _, tt := range tests {
		if got := errors.Is(tt.err, tt.family); got != tt.want {
			t.Errorf("errors.Is(%v, %v) = %v, want %v", tt.err, tt.family, got, tt.want)
		}
	}
}

// TestInvalidInput: input no call could accept (a nil or typed-nil reader,
// key value or attribute value, a nil context, a Store not made by New,
// per-call options New would refuse, caller attributes that make the parent
// too large whatever it held) fails with an error matching ErrInvalid
// before any request, and never panics.
func TestInvalidInput(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv)
		c, oc := e.countingClient()
		st := newStore(t, c, e.parents, e.chunks, func(o *Options) { o.ChunkSize = 1000 })
		ctx := context.Background()
		key := sKey("k")
		data := payload(3000, 1, false) // chunked: reading it takes requests
		if _, err := st.Put(ctx, key, data); err != nil {
			t.Fatal(err)
		}
		out, err := e.c.GetItem(ctx, &dynamodb.GetItemInput{TableName: &e.parents, Key: key.item(), ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		var nilCtx context.Context
		attrs := func(v any) func(*PutOptions) { return func(o *PutOptions) { o.Attributes = v } }
		huge := attrs(map[string]types.AttributeValue{"Big": &types.AttributeValueMemberB{Value: make([]byte, ddbsize.MaxItemSize)}})
		typedNilAttr := attrs(map[string]types.AttributeValue{"a": (*types.AttributeValueMemberS)(nil)})
		nestedNilAttr := attrs(map[string]types.AttributeValue{"m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{(*types.AttributeValueMemberN)(nil)}}}}})
		nilAttr := attrs(map[string]types.AttributeValue{"a": nil})
		badNumber := attrs(map[string]types.AttributeValue{"a": &types.AttributeValueMemberN{Value: "x"}})
		unmarshalable := attrs(struct{ V failingMarshaler }{})
		nilCond := func(o *PutOptions) {
			o.Condition = expression.Name("a").Equal(expression.Value((*types.AttributeValueMemberS)(nil)))
		}
		nilKey := Key{PartitionName: "pk", Partition: (*types.AttributeValueMemberS)(nil)}
		nilSortKey := Key{PartitionName: "pk", Partition: key.Partition, SortName: "sk", Sort: (*types.AttributeValueMemberB)(nil)}
		nilItem := map[string]types.AttributeValue{"pk": key.Partition}
		for _, name := range reserved {
			nilItem[name] = (*types.AttributeValueMemberS)(nil)
		}
		nilItem[attrCount], nilItem[attrSHA] = (*types.AttributeValueMemberN)(nil), (*types.AttributeValueMemberB)(nil)
		badOpt := func(o *Options) { o.MaxConcurrency = -1 }
		var zero Store
		var nilStore *Store
		tests := []struct {
			name string
			call func() error
			want error
		}{
			{"PutReader nil reader", func() error { _, err := st.PutReader(ctx, key, nil); return err }, ErrInvalid},
			{"PutReader typed nil *bytes.Reader", func() error { _, err := st.PutReader(ctx, key, (*bytes.Reader)(nil)); return err }, ErrInvalid},
			{"PutReader typed nil *strings.Reader", func() error { _, err := st.PutReader(ctx, key, (*strings.Reader)(nil)); return err }, ErrInvalid},
			{"Put nil ctx", func() error { _, err := st.Put(nilCtx, key, data); return err }, ErrInvalid},
			{"PutReader nil ctx", func() error { _, err := st.PutReader(nilCtx, key, bytes.NewReader(data)); return err }, ErrInvalid},
			{"Get nil ctx", func() error { _, _, err := st.Get(nilCtx, key); return err }, ErrInvalid},
			{"Open nil ctx", func() error { _, err := st.Open(nilCtx, key); return err }, ErrInvalid},
			{"Resolve nil ctx", func() error { _, _, err := st.Resolve(nilCtx, key, out.Item); return err }, ErrInvalid},
			{"Stat nil ctx", func() error { _, err := st.Stat(nilCtx, key); return err }, ErrInvalid},
			{"Delete nil ctx", func() error { return st.Delete(nilCtx, key) }, ErrInvalid},
			{"Sweep nil ctx", func() error { _, err := st.Sweep(nilCtx); return err }, ErrInvalid},
			{"Sweep too many segments", func() error {
				_, err := st.Sweep(ctx, func(o *SweepOptions) { o.Segments = 1_000_001 })
				return err
			}, ErrInvalid},
			{"Get per-call option", func() error { _, _, err := st.Get(ctx, key, badOpt); return err }, ErrInvalid},
			{"Open per-call option", func() error { _, err := st.Open(ctx, key, badOpt); return err }, ErrInvalid},
			{"Stat per-call option", func() error { _, err := st.Stat(ctx, key, badOpt); return err }, ErrInvalid},
			{"Resolve per-call option", func() error { _, _, err := st.Resolve(ctx, key, out.Item, badOpt); return err }, ErrInvalid},
			{"Delete per-call option", func() error { return st.Delete(ctx, key, badOpt) }, ErrInvalid},
			{"zero Store Get", func() error { _, _, err := zero.Get(ctx, key); return err }, ErrInvalid},
			{"zero Store Put", func() error { _, err := zero.Put(ctx, key, data); return err }, ErrInvalid},
			{"nil Store Delete", func() error { return nilStore.Delete(ctx, key) }, ErrInvalid},
			{"nil Store Sweep", func() error { _, err := nilStore.Sweep(ctx); return err }, ErrInvalid},
			{"Put typed nil attribute", func() error { _, err := st.Put(ctx, key, data, typedNilAttr); return err }, ErrInvalid},
			{"Put nested typed nil attribute", func() error { _, err := st.Put(ctx, key, data, nestedNilAttr); return err }, ErrInvalid},
			{"Put nil attribute", func() error { _, err := st.Put(ctx, key, data, nilAttr); return err }, ErrInvalid},
			{"Put malformed attribute", func() error { _, err := st.Put(ctx, key, data, badNumber); return err }, ErrInvalid},
			{"Put unmarshalable attributes", func() error { _, err := st.Put(ctx, key, data, unmarshalable); return err }, ErrInvalid},
			{"Put typed nil in condition", func() error { _, err := st.Put(ctx, key, data, nilCond); return err }, ErrInvalid},
			{"Put typed nil key", func() error { _, err := st.Put(ctx, nilKey, data); return err }, ErrInvalidKey},
			{"Get typed nil key", func() error { _, _, err := st.Get(ctx, nilKey); return err }, ErrInvalidKey},
			{"Delete typed nil sort key", func() error { return st.Delete(ctx, nilSortKey) }, ErrInvalidKey},
			{"Resolve typed nil values", func() error { _, _, err := st.Resolve(ctx, key, nilItem); return err }, ErrNotFound},
			{"Put parent over the item limit", func() error { _, err := st.Put(ctx, key, []byte("x"), huge); return err }, ErrTooLarge},
			{"PutReader parent over the item limit", func() error {
				_, err := st.PutReader(ctx, key, strings.NewReader("x"), huge)
				return err
			}, ErrTooLarge},
			{"chunked Put parent over the item limit", func() error { _, err := st.Put(ctx, key, data, huge); return err }, ErrTooLarge},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				oc.reset()
				err := noPanic(tt.call)
				if !errors.Is(err, tt.want) {
					t.Errorf("got %v, want %v", err, tt.want)
				}
				if tt.want != ErrNotFound && !errors.Is(err, ErrInvalid) {
					t.Errorf("got %v, want it to match ErrInvalid", err)
				}
				if n := oc.total(); n != 0 {
					t.Errorf("%d requests, want 0", n)
				}
			})
		}
		if got, _, err := st.Get(ctx, key); err != nil || !bytes.Equal(got, data) {
			t.Errorf("get after the rejected calls: %d bytes, %v; want the payload", len(got), err)
		}
	})
}
