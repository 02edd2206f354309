package tmp
import (
 _ "github.com/aws/aws-sdk-go-v2/service/dynamodb"
 _ "github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
 _ "github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
 _ "golang.org/x/sync/errgroup"
 _ "github.com/google/go-cmp/cmp"
 _ "go.uber.org/goleak"
)
