package batch

// Per-key pacing, end to end through the real SDK against both servers,
// with dynashardtest/faultproxy's per-key capacity model doing the
// throttling.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/internal/ddbtest"
)

// paceCase is a (pk, sk) table behind a proxy, written by keys.
type paceCase struct {
	srv    *ddbtest.Server
	table  string
	proxy  *faultproxy.Proxy
	client *dynamodb.Client
	opt    func(*Options)
}

func setupPace(t *testing.T, srv *ddbtest.Server, cfg faultproxy.Config) *paceCase {
	t.Helper()
	pc := &paceCase{srv: srv, table: srv.Table(t, "pk:S", "sk:S")}
	pc.proxy = newProxy(t, srv, cfg)
	var tr interface{ CloseIdleConnections() }
	pc.client, tr, _ = newClient(pc.proxy.URL(), 3)
	t.Cleanup(tr.CloseIdleConnections)
	pc.opt = func(o *Options) { o.KeyAttributes = map[string][]string{pc.table: {"pk", "sk"}} }
	return pc
}

// writes returns count puts of partition key pk.
func (pc *paceCase) writes(pk string, count int) []Write {
	ws := make([]Write, count)
	for i := range ws {
		ws[i] = Write{Table: pc.table, Put: item{"pk": s(pk), "sk": s(fmt.Sprintf("%05d", i)), "v": n2(i)}}
	}
	return ws
}

func (pc *paceCase) key(pk string) faultproxy.Key { return faultproxy.Key{Table: pc.table, PK: pk} }

// stored counts the items of each partition key in the table.
func (pc *paceCase) stored(t *testing.T) map[string]map[string]bool {
	t.Helper()
	out := map[string]map[string]bool{}
	p := dynamodb.NewScanPaginator(pc.srv.Client(), &dynamodb.ScanInput{TableName: aws.String(pc.table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			pk := it["pk"].(*types.AttributeValueMemberS).Value
			if out[pk] == nil {
				out[pk] = map[string]bool{}
			}
			out[pk][it["sk"].(*types.AttributeValueMemberS).Value] = true
		}
	}
	return out
}

// checkOnce checks that every write of ws is stored and was forwarded
// exactly once: each key's writes are all stored, and the proxy forwarded
// as many of that key's entries as it has writes.
func (pc *paceCase) checkOnce(t *testing.T, ws []Write) {
	t.Helper()
	want := map[string]int{}
	for _, w := range ws {
		want[w.Put["pk"].(*types.AttributeValueMemberS).Value]++
	}
	got := pc.stored(t)
	keys := pc.proxy.Stats().Keys
	for pk, n := range want {
		if len(got[pk]) != n {
			t.Errorf("key %s: %d items stored, want %d", pk, len(got[pk]), n)
		}
		if f := keys[pc.key(pk)].Forwarded; f != n {
			t.Errorf("key %s: %d entries forwarded, want %d (each exactly once)", pk, f, n)
		}
	}
}

// TestPaceFairness: one key with a long backlog is throttled hard by its
// capacity while twenty others have a little to write each. The hot key
// comes first in the input, as in an export sorted by key. The others are
// all written while most of the hot key's backlog is still waiting, each
// of their entries sent once; the hot key's entries wait for its pace
// instead of filling the requests.
//
// The proxy admits by the wall clock, so the others must be done before
// it has admitted half the hot backlog: within about 6 s. They take under
// a second on a quiet machine. The backlog is long for that margin: with
// 600 entries at 200 WCU it was 1.4 s, which a machine at load 11 came
// within 3 entries of.
func TestPaceFairness(t *testing.T) {
	eachParallel(t, func(t *testing.T, srv *ddbtest.Server) {
		// 100 WCU per key and 200 ms of burst: the others' 10 items each
		// fit their keys' burst, the hot key's 1,200 take about 12 s.
		pc := setupPace(t, srv, faultproxy.Config{WCU: 100, Burst: 200 * time.Millisecond})
		const hotItems, others, perOther = 1200, 20, 10
		ws := pc.writes("hot", hotItems)
		for i := range others {
			ws = append(ws, pc.writes(fmt.Sprint("other", i), perOther)...)
		}
		var (
			mu          sync.Mutex
			hotAtOthers = -1 // hot entries forwarded when the others were done
			reqAtOthers = -1 // requests sent by then
		)
		st, err := WriteAll(context.Background(), pc.client, ws, pc.opt, func(o *Options) {
			o.StallTimeout = time.Minute
			o.OnProgress = func(st Stats) {
				mu.Lock()
				defer mu.Unlock()
				if hotAtOthers >= 0 {
					return
				}
				keys := pc.proxy.Stats().Keys
				for i := range others {
					if keys[pc.key(fmt.Sprint("other", i))].Forwarded < perOther {
						return
					}
				}
				hotAtOthers, reqAtOthers = keys[pc.key("hot")].Forwarded, st.Requests
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		pc.checkOnce(t, ws)
		if hotAtOthers < 0 || hotAtOthers >= hotItems/2 {
			t.Errorf("the other keys were done when %d of the hot key's %d entries were written; want fewer than half", hotAtOthers, hotItems)
		}
		keys := pc.proxy.Stats().Keys
		for i := range others {
			if c := keys[pc.key(fmt.Sprint("other", i))]; c.Requests != perOther {
				t.Errorf("other%d: %d entries sent for %d items, want each sent once", i, c.Requests, perOther)
			}
		}
		if hot := keys[pc.key("hot")]; st.Paced == 0 || hot.Unprocessed == 0 {
			t.Errorf("stats %+v, hot key %+v: want the hot key throttled and paced", st, hot)
		}
		// The hot key alone was paced: KeyRates holds its learned rate.
		if len(st.KeyRates) != 1 || st.KeyRates[0] <= 0 {
			t.Errorf("KeyRates %v, want one rate (the hot key's)", st.KeyRates)
		}
		t.Logf("%s: others done at %d hot entries written, %d requests; %+v; hot key %+v", srv.Kind, hotAtOthers, reqAtOthers, st, keys[pc.key("hot")])
	})
}

// TestPaceExactlyOnce: keys paced for their capacity while the proxy also
// returns 50 % or 90 % of entries unprocessed at random, or 100 % (an
// outage) for a while, end with every item stored and forwarded exactly
// once. Six keys of 40 writes each (150 with -batch.long); the work ends
// the call, StallTimeout is only a safety bound.
func TestPaceExactlyOnce(t *testing.T) {
	perKey := 40
	if *long {
		perKey = 150
	}
	for _, rate := range []float64{0.5, 0.9, 1} {
		t.Run(fmt.Sprintf("%.0f%% unprocessed", rate*100), func(t *testing.T) {
			eachParallel(t, func(t *testing.T, srv *ddbtest.Server) {
				cfg := faultproxy.Config{WCU: 300, Burst: 100 * time.Millisecond, Seed: 7}
				faulty := cfg
				faulty.UnprocessedRate, faulty.Ops = rate, []string{"BatchWriteItem"}
				pc := setupPace(t, srv, faulty)
				var ws []Write
				for k := range 6 {
					ws = append(ws, pc.writes(fmt.Sprint("key", k), perKey)...)
				}
				var once sync.Once
				st, err := WriteAll(context.Background(), pc.client, ws, pc.opt, func(o *Options) {
					o.BaseDelay, o.MaxDelay, o.StallTimeout = 2*time.Millisecond, 50*time.Millisecond, 10*time.Minute
					if rate == 1 {
						o.OnProgress = func(st Stats) {
							if st.UnprocessedRounds >= 20 { // the outage ends
								once.Do(func() {
									if err := pc.proxy.Set(cfg); err != nil {
										t.Error(err)
									}
								})
							}
						}
					}
				})
				if err != nil {
					t.Fatal(err)
				}
				pc.checkOnce(t, ws)
				if st.Done != len(ws) || pc.proxy.Stats().Total.Unprocessed == 0 {
					t.Errorf("stats %+v, proxy %+v: want every write done and unprocessed entries seen", st, pc.proxy.Stats().Total)
				}
				t.Logf("%s: %+v", srv.Kind, st)
			})
		})
	}
}

// TestPaceExactFailures: a key in a permanent outage (every entry
// returned unprocessed) while the others are fine: the others are all
// written, and the call ends in ErrStalled after StallTimeout listing
// exactly the outage key's writes, none of which was stored.
func TestPaceExactFailures(t *testing.T) {
	eachParallel(t, func(t *testing.T, srv *ddbtest.Server) {
		pc := setupPace(t, srv, faultproxy.Config{WCU: 300, Burst: 100 * time.Millisecond,
			UnprocessedRate: 1, Ops: []string{"BatchWriteItem"}, Keys: []string{"down"}})
		ws := pc.writes("down", 100)
		var up []Write
		for k := range 10 {
			up = append(up, pc.writes(fmt.Sprint("up", k), 40)...)
		}
		ws = append(ws, up...)
		st, err := WriteAll(context.Background(), pc.client, ws, pc.opt, func(o *Options) {
			o.StallTimeout = time.Second
		})
		var ue *UnprocessedError
		if !errors.As(err, &ue) || !errors.Is(err, ErrStalled) {
			t.Fatalf("got %v, want *UnprocessedError wrapping ErrStalled", err)
		}
		if diff := len(ue.Writes) - 100; diff != 0 || st.Done != len(up) {
			t.Errorf("listed %d writes, done %d; want the 100 of the key down listed, %d done", len(ue.Writes), st.Done, len(up))
		}
		for i, w := range ue.Writes {
			if pk := w.Put["pk"].(*types.AttributeValueMemberS).Value; pk != "down" || w.Put["sk"].(*types.AttributeValueMemberS).Value != fmt.Sprintf("%05d", i) {
				t.Errorf("listed write %d: %s/%v, want down/%05d (input order)", i, pk, w.Put["sk"], i)
			}
		}
		got := pc.stored(t)
		if len(got["down"]) != 0 {
			t.Errorf("%d items of the key down stored, want none", len(got["down"]))
		}
		pc.checkOnce(t, up)
	})
}
