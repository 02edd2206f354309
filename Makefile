# The two commands a new user needs: `make demo` and `make test`.
GO ?= go

.PHONY: test test-long demo servers vet fuzz bench bench-report

# test installs the local servers (once; cached), checks formatting and vet,
# and runs every test with the race detector; integration tests run against
# both DynamoDB Local and dynalite. The bench, the examples and the S3
# adapter (s3blob/, whose integration tests against s3rver are a module of
# their own in s3blob/internal/integrationtest) are modules of their own,
# so their tests run from there. Last, the release check (RELEASING.md):
# the released modules fetched from a file proxy at a test version, without
# replace, by a consumer that runs the README's quick start.
test: servers vet
	$(GO) test -race -count=1 -timeout 30m ./...
	cd bench && $(GO) test -race -count=1 -timeout 30m ./...
	cd examples && $(GO) test -race -count=1 -timeout 30m ./...
	cd s3blob && $(GO) test -race -count=1 -timeout 30m ./...
	cd s3blob/internal/integrationtest && $(GO) test -race -count=1 -timeout 30m ./...
	cd tools && $(GO) run ./releasecheck -repo ..

# test-long runs the long modes that make test leaves out, with the same
# assertions: the full-size workloads of chunk (-chunk.long: 64 MiB round
# trips, 40 MB read window, ten times the concurrent history, 400 property
# cases), internal/batch (-batch.long: 10,000 puts at 90% unprocessed, 16
# MB requests) and s3blob's integration tests (-s3blob.long: a 100 MiB
# round trip), then shard's resharding checker for 5 minutes and its
# multi-process checker for 10, and stream's convergence checker on a
# history of about 3,300 writes replayed 1,000 ways. make test sizes each
# package's tests to take under 2 minutes; its checkers run until enough
# has happened, not for a time.
test-long: servers
	$(GO) test -race -count=1 -timeout 60m ./chunk -chunk.long
	$(GO) test -race -count=1 -timeout 60m ./internal/batch -batch.long
	cd s3blob/internal/integrationtest && $(GO) test -race -count=1 -timeout 60m . -s3blob.long
	$(GO) test -race -count=1 -timeout 60m ./shard -run TestLinearizableResharding -shard.lin=5m
	$(GO) test -count=1 -timeout 60m ./shard -run TestMultiProcess -shard.mproc=10m
	$(GO) test -race -count=1 -timeout 60m ./stream -run TestConvergence -stream.writes=1000 -stream.interleavings=1000

# demo runs examples/demo, in the examples module.
demo: servers
	cd examples && $(GO) run ./demo

servers:
	$(GO) run ./internal/tools/servers

# vet checks gofmt on every Go file git knows or would add (untracked ones
# too, so that a new file is checked before its first commit), then runs
# go vet and staticcheck in every module: the library, bench/, examples/
# and s3blob/. staticcheck is the version pinned in tools/go.mod, a module
# of its own so that the library's go.mod carries only what the library
# imports; go tool builds it once (cached) and -n prints the binary.
vet:
	@files=$$(for f in $$(git ls-files -co --exclude-standard '*.go' 2>/dev/null || find . -name '*.go'); do \
	    [ -f "$$f" ] && echo "$$f"; done); \
	  out=$$(gofmt -l $$files); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	cd bench && $(GO) vet ./...
	cd examples && $(GO) vet ./...
	cd s3blob && $(GO) vet ./...
	cd s3blob/internal/integrationtest && $(GO) vet ./...
	cd tools && $(GO) vet ./...
	@sc=$$(cd tools && $(GO) tool -n staticcheck) && set -x && \
	  $$sc ./... && (cd bench && $$sc ./...) && (cd examples && $$sc ./...) && (cd s3blob && $$sc ./...) && \
	  (cd s3blob/internal/integrationtest && $$sc ./...) && (cd tools && $$sc ./releasecheck)

bench: servers
	$(GO) test -run '^$$' -bench . -benchmem ./...

# bench-report reruns the measurements of the README (about 5 minutes: 3m6s
# in the last run, the "Run:" line of docs/bench/results.md, before
# scenario 10 added 2-3 minutes) and
# rewrites docs/bench; BENCHFLAGS adds flags, e.g. BENCHFLAGS='-note "..."'.
bench-report: servers
	cd bench && $(GO) run . -out ../docs/bench $(BENCHFLAGS)
