package svctest

import (
	"fmt"
	"log"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynashard/dynashard/dynashardtest"
	"github.com/dynashard/dynashard/examples/internal/backend"
)

// Server is one server the examples' tests run against: a local server of
// Kind, started through dynashardtest, or, when DYNASHARD_SERVER is a URL,
// that Endpoint.
type Server struct {
	Kind     dynashardtest.Kind
	Endpoint string
}

// Name names the server's subtest: "ddblocal", "dynalite" or "endpoint".
func (s Server) Name() string {
	if s.Endpoint != "" {
		return "endpoint"
	}
	return string(s.Kind)
}

func (s Server) options(o *dynashardtest.Options) { o.Kind, o.Endpoint = s.Kind, s.Endpoint }

// Selected returns the servers DYNASHARD_SERVER selects, as the library's
// own tests read it: unset or "all" means both local servers, "ddblocal"
// or "dynalite" one, a comma-separated list several, and an http(s) URL
// a server that already runs there.
func Selected() ([]Server, error) {
	v := strings.TrimSpace(os.Getenv("DYNASHARD_SERVER"))
	switch {
	case v == "" || v == "all":
		return []Server{{Kind: dynashardtest.DynamoDBLocal}, {Kind: dynashardtest.Dynalite}}, nil
	case strings.HasPrefix(v, "http://") || strings.HasPrefix(v, "https://"):
		return []Server{{Endpoint: v}}, nil
	}
	var servers []Server
	for _, f := range strings.Split(v, ",") {
		switch k := dynashardtest.Kind(strings.TrimSpace(f)); k {
		case dynashardtest.DynamoDBLocal, dynashardtest.Dynalite:
			servers = append(servers, Server{Kind: k})
		default:
			return nil, fmt.Errorf("svctest: DYNASHARD_SERVER=%q: want %s, %s, all or an http(s) URL",
				v, dynashardtest.DynamoDBLocal, dynashardtest.Dynalite)
		}
	}
	return servers, nil
}

// Main runs the tests holding one dynashardtest handle per selected server,
// so that the Starts of Each share one server of each kind for the whole
// test binary instead of starting a JVM per test. Use it as
// func TestMain(m *testing.M) { svctest.Main(m) }.
func Main(m *testing.M) {
	servers, err := Selected()
	if err != nil {
		log.Fatal(err)
	}
	var held []*dynashardtest.Server
	for _, s := range servers {
		h, err := dynashardtest.NewServer(s.options)
		if err != nil {
			log.Fatalf("svctest: %s: %v", s.Name(), err)
		}
		held = append(held, h)
	}
	code := m.Run()
	for _, h := range held {
		if err := h.Close(); err != nil {
			log.Printf("svctest: %v", err)
			code = max(code, 1)
		}
	}
	os.Exit(code)
}

// Each runs fn as a subtest named after each selected server, with a
// dynashardtest handle on it that is closed when the subtest ends.
func Each(t *testing.T, fn func(t *testing.T, srv *dynashardtest.Server)) {
	t.Helper()
	servers, err := Selected()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range servers {
		t.Run(s.Name(), func(t *testing.T) {
			fn(t, dynashardtest.Start(t, s.options))
		})
	}
}

// Client returns a client of srv that signs as a program run with
// -endpoint srv.Endpoint() does (backend.EndpointClient). DynamoDB Local
// keeps separate tables for each access key and region, so a test that
// looks at the tables a program made reads through this client, not
// srv.Client.
func Client(tb testing.TB, srv *dynashardtest.Server) *dynamodb.Client {
	tb.Helper()
	c, err := backend.EndpointClient(srv.Endpoint(), nil)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}
