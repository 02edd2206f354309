package dynashard_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"

	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/dynashardtest"
	"github.com/dynashard/dynashard/shard"
)

// An HTTP handler answers a failed call with the status HTTPStatus maps
// its error to: an absent order 404, an empty day 400. A throttled call
// would get 503, with a Retry-After header.
func ExampleHTTPStatus() {
	ctx := context.Background()
	srv, err := dynashardtest.NewServer()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	orders := shard.Layout{Table: dynashardtest.TableName("orders"), PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(16)}
	in, err := orders.CreateTableInput()
	if err == nil {
		err = srv.CreateTable(ctx, in)
	}
	var tbl *shard.Table[Order]
	if err == nil {
		tbl, err = shard.NewTable[Order](srv.Client(), orders)
	}
	if err == nil {
		err = tbl.Put(ctx, "2014-07-09", Order{ID: "ORD-1", Amount: 42})
	}
	if err != nil {
		fmt.Println(err)
		return
	}

	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o, err := tbl.Get(r.Context(), r.URL.Query().Get("day"), r.URL.Query().Get("id"))
		if err != nil {
			code, wait := dynashard.HTTPStatus(err)
			if wait > 0 {
				w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())))
			}
			http.Error(w, http.StatusText(code), code)
			return
		}
		fmt.Fprintln(w, o.ID, o.Amount)
	})
	for _, q := range []string{"day=2014-07-09&id=ORD-1", "day=2014-07-09&id=ORD-2", "day=&id=ORD-1"} {
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, httptest.NewRequest("GET", "/orders?"+q, nil))
		fmt.Print(rec.Code, " ", rec.Body.String())
	}
	// Output:
	// 200 ORD-1 42
	// 404 Not Found
	// 400 Bad Request
}
