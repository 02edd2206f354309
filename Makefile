# The two commands a new user needs: `make demo` and `make test`.
GO ?= go

.PHONY: test demo servers vet fuzz bench

# test installs the local servers (once; cached), checks formatting and vet,
# and runs every test with the race detector; integration tests run against
# both DynamoDB Local and dynalite.
test: servers vet
	$(GO) test -race -count=1 -timeout 30m ./...

demo: servers
	$(GO) run ./examples/demo

servers:
	$(GO) run ./internal/tools/servers

vet:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

bench: servers
	$(GO) test -run '^$$' -bench . -benchmem ./...
