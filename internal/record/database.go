package record

import (
	"context"
	"reflect"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// The history cache is per database, not per table name: two clients
// that reach different endpoints, regions or accounts may each hold a
// table of the same name, and each table has its own records. A
// database is named by what the client resolves: its endpoint, its
// region, and the account of its credentials (their AccountID, or their
// access key ID when the provider gives no account, as with static keys;
// DynamoDB Local keeps one database per access key and region). Two
// clients that resolve the same three share the cache, so one sees the
// other's Reshard at once.
//
// A client without an Options method (a wrapper that hides it) is a
// database of its own, per client value: its views are shared with no
// other client.

// optionsClient is a client that tells its configuration, as
// *dynamodb.Client does.
type optionsClient interface {
	Options() dynamodb.Options
}

// databases memoizes each client's database name, keyed by the client
// (a pointer); credentials are asked for once per client.
var databases sync.Map

// Database names the database that c reaches, which keys the cache.
// ctx bounds a first retrieval of c's credentials (the SDK caches them).
func Database(ctx context.Context, c Reader) string {
	if id, ok := KnownDatabase(c); ok {
		return id
	}
	oc, ok := c.(optionsClient)
	if !ok {
		return clientIdentity(c)
	}
	o := oc.Options()
	id := "endpoint=" + endpointOf(ctx, o) + " region=" + o.Region
	if o.Credentials == nil {
		return storeDatabase(c, id)
	}
	creds, err := o.Credentials.Retrieve(ctx)
	if err != nil {
		return id // not kept: the next call asks again
	}
	account := creds.AccountID
	if account == "" {
		account = "key:" + creds.AccessKeyID
	}
	return storeDatabase(c, id+" account="+account)
}

// KnownDatabase is c's database name if it is known without a request.
func KnownDatabase(c Reader) (string, bool) {
	if _, ok := c.(optionsClient); !ok {
		return clientIdentity(c), true
	}
	if !memoizable(c) {
		return "", false
	}
	id, ok := databases.Load(c)
	if !ok {
		return "", false
	}
	return id.(string), true
}

func storeDatabase(c Reader, id string) string {
	if memoizable(c) {
		databases.Store(c, id)
	}
	return id
}

// memoizable reports whether c can key the memo: a pointer, compared by
// address.
func memoizable(c Reader) bool {
	return c != nil && reflect.TypeOf(c).Kind() == reflect.Pointer
}

// clientIdentity names a client that does not tell its configuration: by
// its address if it is a pointer, by its type otherwise.
func clientIdentity(c Reader) string {
	if memoizable(c) {
		return "client=" + reflect.TypeOf(c).String() + "@" + strconv.FormatUint(uint64(reflect.ValueOf(c).Pointer()), 16)
	}
	return "client=" + reflect.TypeOf(c).String()
}

// endpointOf is the endpoint o resolves: BaseEndpoint if set, else what
// its endpoint resolver gives for its region; empty if neither says.
func endpointOf(ctx context.Context, o dynamodb.Options) string {
	if o.BaseEndpoint != nil {
		return *o.BaseEndpoint
	}
	if o.EndpointResolverV2 == nil {
		return ""
	}
	ep, err := o.EndpointResolverV2.ResolveEndpoint(ctx, dynamodb.EndpointParameters{
		Region: aws.String(o.Region), UseFIPS: aws.Bool(o.EndpointOptions.UseFIPSEndpoint == aws.FIPSEndpointStateEnabled),
		UseDualStack: aws.Bool(o.EndpointOptions.UseDualStackEndpoint == aws.DualStackEndpointStateEnabled),
	})
	if err != nil {
		return ""
	}
	return ep.URI.String()
}
