package chunk

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ChunkTableInput returns the CreateTable input of the Store's chunk
// table: its name, a simple primary key of type S named
// Options.ChunkKeyAttribute, and on-demand billing. It makes no request;
// change what the table needs (provisioned throughput, tags, encryption)
// before sending it with CreateTable. A Store not created by New gets an
// error matching ErrInvalid.
func (s *Store) ChunkTableInput() (*dynamodb.CreateTableInput, error) {
	if s == nil || s.c == nil {
		return nil, invalid("ChunkTableInput", "Store not created by New")
	}
	return tableInput(s.chunks, s.opts.ChunkKeyAttribute, types.ScalarAttributeTypeS, "", ""), nil
}

// ParentTableInput returns the CreateTable input of the Store's parent
// table for parent items keyed like key: key's attribute names, with the
// types of its values (S, N or B; the values themselves are not used), and
// on-demand billing. It makes no request; the parent table is the
// caller's, so add what it needs besides (indexes, throughput) before
// sending it. A key that is not valid gets an error matching
// ErrInvalidKey, a Store not created by New one matching ErrInvalid.
func (s *Store) ParentTableInput(key Key) (*dynamodb.CreateTableInput, error) {
	if s == nil || s.c == nil {
		return nil, invalid("ParentTableInput", "Store not created by New")
	}
	if err := key.validate(); err != nil {
		return nil, err
	}
	var sortType types.ScalarAttributeType
	if key.SortName != "" {
		sortType = scalarType(key.Sort)
	}
	return tableInput(s.parents, key.PartitionName, scalarType(key.Partition), key.SortName, sortType), nil
}

// scalarType is the type of a key value validate accepted.
func scalarType(v types.AttributeValue) types.ScalarAttributeType {
	switch v.(type) {
	case *types.AttributeValueMemberN:
		return types.ScalarAttributeTypeN
	case *types.AttributeValueMemberB:
		return types.ScalarAttributeTypeB
	}
	return types.ScalarAttributeTypeS
}

func tableInput(name, pk string, pkType types.ScalarAttributeType, sk string, skType types.ScalarAttributeType) *dynamodb.CreateTableInput {
	in := &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(pk), AttributeType: pkType}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(pk), KeyType: types.KeyTypeHash}},
	}
	if sk != "" {
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String(sk), AttributeType: skType})
		in.KeySchema = append(in.KeySchema, types.KeySchemaElement{AttributeName: aws.String(sk), KeyType: types.KeyTypeRange})
	}
	return in
}
