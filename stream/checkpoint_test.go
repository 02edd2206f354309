package stream_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/dynashard/dynashard/stream"
)

const (
	testARN   = "arn:aws:dynamodb:ddblocal:000000000000:table/orders/stream/2026-11-27T21:15:28.112"
	testShard = "shardId-00000001795814128314-cf00ff5d"
)

func TestCheckpointText(t *testing.T) {
	good := `{"v":1,"stream":"` + testARN + `","shards":{"` + testShard + `":{"after":"000000000000000000042"},"shardId-00000001795814128314-00000000":{"finished":true}}}`
	for _, tc := range []struct {
		name, text string
		want       error
	}{
		{"empty", "", nil},
		{"no shards", `{"v":1,"stream":"` + testARN + `"}`, nil},
		{"shards", good, nil},
		{"finished after a sequence number", strings.Replace(good, `"after":"000000000000000000042"`, `"after":"000000000000000000042","finished":true`, 1), nil},
		{"version 2", strings.Replace(good, `"v":1`, `"v":2`, 1), stream.ErrInvalidCheckpoint},
		{"no stream", `{"v":1}`, stream.ErrInvalidCheckpoint},
		{"a table name", `{"v":1,"stream":"orders"}`, stream.ErrInvalidCheckpoint},
		{"unknown field", strings.Replace(good, `"v":1`, `"v":1,"x":2`, 1), stream.ErrInvalidCheckpoint},
		{"trailing data", good + "{}", stream.ErrInvalidCheckpoint},
		{"short sequence number", strings.Replace(good, "000000000000000000042", "42", 1), stream.ErrInvalidCheckpoint},
		{"sequence number not digits", strings.Replace(good, "000000000000000000042", "00000000000000000004x", 1), stream.ErrInvalidCheckpoint},
		{"empty position", strings.Replace(good, `{"finished":true}`, `{}`, 1), stream.ErrInvalidCheckpoint},
		{"short shard ID", strings.Replace(good, testShard, "shardId-1", 1), stream.ErrInvalidCheckpoint},
		{"shard ID with a space", strings.Replace(good, testShard, "shardId-00000001795814128314 cf00ff5d", 1), stream.ErrInvalidCheckpoint},
		{"not JSON", "v1 " + testARN, stream.ErrInvalidCheckpoint},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cp, err := stream.ParseCheckpoint(tc.text)
			if tc.want != nil {
				if !errors.Is(err, tc.want) || !errors.Is(err, stream.ErrInvalid) {
					t.Errorf("got %v, want %v", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("got %v, want no error", err)
			}
			again, err := stream.ParseCheckpoint(cp.String())
			if err != nil || again.String() != cp.String() {
				t.Errorf("ParseCheckpoint(%q) = %q, %v; want it again", cp.String(), again.String(), err)
			}
		})
	}
	cp, err := stream.ParseCheckpoint(good)
	if err != nil {
		t.Fatal(err)
	}
	if got := position(cp, testShard); got != (stream.ShardPosition{After: "000000000000000000042"}) {
		t.Errorf("shard %s: got %+v", testShard, got)
	}
	if cp.StreamARN() != testARN {
		t.Errorf("StreamARN: got %s, want %s", cp.StreamARN(), testARN)
	}
	// In a JSON document, a Checkpoint is a string.
	type stored struct{ Checkpoint stream.Checkpoint }
	b, err := json.Marshal(stored{cp})
	if err != nil {
		t.Fatal(err)
	}
	var back stored
	if err := json.Unmarshal(b, &back); err != nil || back.Checkpoint.String() != cp.String() {
		t.Errorf("through JSON: got %q, %v; want %q", back.Checkpoint.String(), err, cp.String())
	}
}

// FuzzCheckpoint: ParseCheckpoint never panics, refuses with
// ErrInvalidCheckpoint, and what it accepts prints to a text it reads
// back to the same checkpoint.
func FuzzCheckpoint(f *testing.F) {
	f.Add("")
	f.Add(`{"v":1,"stream":"` + testARN + `"}`)
	f.Add(`{"v":1,"stream":"` + testARN + `","shards":{"` + testShard + `":{"after":"000000000000000000042","finished":true}}}`)
	f.Add(`{"V":1,"Stream":"` + testARN + `","shards":{"` + testShard + `":{"finished":true}},"shards":null}`)
	f.Add(`{"v":1.0,"stream":"` + testARN + `","shards":{"` + testShard + `":{"after":"99999999999999999999999999999999999999"}}}`)
	f.Add(`[1]`)
	f.Fuzz(func(t *testing.T, text string) {
		cp, err := stream.ParseCheckpoint(text)
		if err != nil {
			if !errors.Is(err, stream.ErrInvalidCheckpoint) || !errors.Is(err, stream.ErrInvalid) {
				t.Fatalf("ParseCheckpoint(%q): %v does not match ErrInvalidCheckpoint", text, err)
			}
			return
		}
		out := cp.String()
		again, err := stream.ParseCheckpoint(out)
		if err != nil {
			t.Fatalf("ParseCheckpoint(%q) accepted, but not its text %q: %v", text, out, err)
		}
		if again.String() != out {
			t.Fatalf("text %q read back prints %q", out, again.String())
		}
		var u stream.Checkpoint
		if err := u.UnmarshalText([]byte(out)); err != nil || u.String() != out {
			t.Fatalf("UnmarshalText(%q) = %q, %v", out, u.String(), err)
		}
		for id, pos := range cp.Shards() {
			if id == "" || (pos.After == "" && !pos.Finished) {
				t.Fatalf("ParseCheckpoint(%q) accepted shard %q at %+v", text, id, pos)
			}
		}
	})
}

// position returns shard id's entry in cp.
func position(cp stream.Checkpoint, id string) stream.ShardPosition {
	for sid, pos := range cp.Shards() {
		if sid == id {
			return pos
		}
	}
	return stream.ShardPosition{}
}
