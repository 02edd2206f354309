package chunk

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"
)

func TestTableInputs(t *testing.T) {
	st := offlineStore(t, func(o *Options) { o.ChunkKeyAttribute = "Id" })
	in, err := st.ChunkTableInput()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := describe(in.TableName, in.KeySchema, in.AttributeDefinitions), "ThreadChunks: HASH Id S"; got != want {
		t.Errorf("chunk table %q, want %q", got, want)
	}
	if in.BillingMode != types.BillingModePayPerRequest {
		t.Errorf("billing mode %q, want on demand", in.BillingMode)
	}
	for key, want := range map[Key]string{
		sKey("a"): "Thread: HASH pk S",
		{PartitionName: "p", Partition: &types.AttributeValueMemberB{Value: []byte{1}}, SortName: "s", Sort: &types.AttributeValueMemberN{Value: "1"}}: "Thread: HASH p B, RANGE s N",
	} {
		in, err := st.ParentTableInput(key)
		if err != nil {
			t.Fatal(err)
		}
		if got := describe(in.TableName, in.KeySchema, in.AttributeDefinitions); got != want {
			t.Errorf("parent table for %v: %q, want %q", key, got, want)
		}
	}
	if _, err := st.ParentTableInput(Key{}); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("ParentTableInput of the zero Key: %v, want ErrInvalidKey", err)
	}
	var zero Store
	if _, err := zero.ChunkTableInput(); !errors.Is(err, ErrInvalid) {
		t.Errorf("ChunkTableInput of the zero Store: %v, want ErrInvalid", err)
	}
	if _, err := (*Store)(nil).ParentTableInput(sKey("a")); !errors.Is(err, ErrInvalid) {
		t.Errorf("ParentTableInput of a nil Store: %v, want ErrInvalid", err)
	}
}

func describe(name *string, schema []types.KeySchemaElement, defs []types.AttributeDefinition) string {
	s := aws.ToString(name) + ":"
	typ := map[string]types.ScalarAttributeType{}
	for _, d := range defs {
		typ[aws.ToString(d.AttributeName)] = d.AttributeType
	}
	if len(typ) != len(schema) {
		return "attribute definitions differ from the key schema: " + cmp.Diff(defs, schema)
	}
	for i, k := range schema {
		if i > 0 {
			s += ","
		}
		s += " " + string(k.KeyType) + " " + aws.ToString(k.AttributeName) + " " + string(typ[aws.ToString(k.AttributeName)])
	}
	return s
}
