package chunk

import (
	"errors"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/ddbsize"
)

func sKey(pk string) Key {
	return Key{PartitionName: "pk", Partition: &types.AttributeValueMemberS{Value: pk}}
}

func sKey2(pk, sk string) Key {
	return Key{PartitionName: "pk", Partition: &types.AttributeValueMemberS{Value: pk},
		SortName: "sk", Sort: &types.AttributeValueMemberS{Value: sk}}
}

func TestKeyPrefix(t *testing.T) {
	tests := []struct {
		name string
		key  Key
		want string
	}{
		{"guide", sKey2("DynamoDB#Thread1", "2012-03-15T20:42:54.023Z"), "DynamoDB#Thread1#2012-03-15T20:42:54.023Z"},
		{"simple", sKey("a"), "a"},
		{"number", Key{PartitionName: "n", Partition: &types.AttributeValueMemberN{Value: "1.50E2"}}, "150"},
		{"small number", Key{PartitionName: "n", Partition: &types.AttributeValueMemberN{Value: "-0.0015"}}, "-0.0015"},
		{"zero", Key{PartitionName: "n", Partition: &types.AttributeValueMemberN{Value: "-0.000"}}, "0"},
		{"binary", Key{PartitionName: "b", Partition: &types.AttributeValueMemberB{Value: []byte{0xff, 0, 1}}}, "/wAB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.key.prefix()
			if err != nil || got != tt.want {
				t.Errorf("got %q, %v, want %q", got, err, tt.want)
			}
		})
	}
}

func TestKeyInvalid(t *testing.T) {
	s := newStore(t, dummyClient{}, "p", "c")
	tests := []struct {
		name string
		key  Key
	}{
		{"zero", Key{}},
		{"no value", Key{PartitionName: "pk"}},
		{"empty S", sKey("")},
		{"empty B", Key{PartitionName: "pk", Partition: &types.AttributeValueMemberB{Value: []byte{}}}},
		{"bad N", Key{PartitionName: "pk", Partition: &types.AttributeValueMemberN{Value: "1e"}}},
		{"BOOL", Key{PartitionName: "pk", Partition: &types.AttributeValueMemberBOOL{Value: true}}},
		{"sort value without name", Key{PartitionName: "pk", Partition: &types.AttributeValueMemberS{Value: "a"}, Sort: &types.AttributeValueMemberS{Value: "b"}}},
		{"sort name without value", Key{PartitionName: "pk", Partition: &types.AttributeValueMemberS{Value: "a"}, SortName: "sk"}},
		{"same names", Key{PartitionName: "pk", Partition: &types.AttributeValueMemberS{Value: "a"}, SortName: "pk", Sort: &types.AttributeValueMemberS{Value: "b"}}},
		{"partition too long", sKey(strings.Repeat("x", 2049))},
		{"sort too long", sKey2("a", strings.Repeat("x", 1025))},
		{"not UTF-8", sKey("\xff")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.keyPrefix(tt.key)
			if !errors.Is(err, ErrInvalidKey) {
				t.Errorf("got %v, want ErrInvalidKey", err)
			}
		})
	}
}

// TestKeyLengthBudget checks the longest accepted prefix against the chunk
// key it produces: the longest chunk key must be exactly at the limit.
func TestKeyLengthBudget(t *testing.T) {
	for _, o := range []Options{{}, {MaxSize: 1}, {ChunkSize: 1000, MaxSize: 50 << 20}} {
		s := newStore(t, dummyClient{}, "p", "c", func(p *Options) { *p = o })
		longest := -1
		for n := 1900; n <= 2048; n++ {
			if _, err := s.keyPrefix(sKey(strings.Repeat("k", n))); err == nil {
				longest = n
			} else if !errors.Is(err, ErrInvalidKey) {
				t.Fatalf("prefix of %d bytes: got %v, want ErrInvalidKey", n, err)
			}
		}
		// The largest sequence number any payload of MaxSize can need,
		// counted by cutting a worst-case stored payload into chunks.
		maxStored := s.opts.MaxSize + s.opts.MaxSize/64 + 1<<16
		maxSeq := (maxStored + int64(s.opts.ChunkSize) - 1) / int64(s.opts.ChunkSize)
		got := len(chunkKey(strings.Repeat("k", longest), newVersion(time.Now()), int(maxSeq)))
		if got != ddbsize.MaxPartitionKeyBytes {
			t.Errorf("options %+v: longest prefix %d gives chunk keys of %d bytes, want %d", o, longest, got, ddbsize.MaxPartitionKeyBytes)
		}
	}
}

// TestDefaultChunkSizeFits builds the largest chunk item the defaults allow
// (longest key values, longest names) and sizes it with DynamoDB's rules.
func TestDefaultChunkSizeFits(t *testing.T) {
	long := func(c byte, n int) string { return strings.Repeat(string(c), n) }
	s := newStore(t, dummyClient{}, "p", "c", func(o *Options) { o.ChunkKeyAttribute = long('K', 255) })
	// The longest prefix with a partition key of 2048 bytes would be too
	// long, so find the longest accepted split between sort and partition.
	worst := 0
	for pk := 1; pk <= 2048; pk += 7 {
		for _, sk := range []int{0, 1, 1024} {
			key := Key{PartitionName: long('P', 255), Partition: &types.AttributeValueMemberS{Value: long('p', pk)}}
			if sk > 0 {
				key.SortName, key.Sort = long('S', 255), &types.AttributeValueMemberS{Value: long('s', sk)}
			}
			prefix, err := s.keyPrefix(key)
			if err != nil {
				continue
			}
			_, overhead, err := s.chunkTemplate(key, prefix)
			if err != nil {
				t.Fatalf("pk %d sk %d: %v", pk, sk, err)
			}
			worst = max(worst, overhead)
		}
	}
	if got := DefaultChunkSize + worst; got > 400_000 {
		t.Errorf("largest chunk item %d bytes, want <= 400000 (40 per 16 MB BatchGetItem)", got)
	}
	if got := groupSize(int64(DefaultChunkSize + worst)); got != 40 {
		t.Errorf("group size %d, want 40", got)
	}
}

func TestCanonicalNumber(t *testing.T) {
	for _, in := range []string{"0", "-0", "1", "1.0", "1E0", "10", "1e1", "100.000", "0.001", "1E-3", "-12.5", "-1.25e1",
		"123456789012345678901234567890.12345678", "1E-130", "9.9999999999999999999999999999999999999E+125", "+7", ".5", "5."} {
		checkCanonical(t, in)
	}
}

func FuzzCanonicalNumber(f *testing.F) {
	for _, s := range []string{"0", "-1.5e3", "1E-130", "12.340", ".5", "00012", "1e", "--1", "9.99E+125"} {
		f.Add(s)
	}
	f.Fuzz(checkCanonical)
}

// checkCanonical compares canonicalNumber with exact rational arithmetic.
func checkCanonical(t *testing.T, in string) {
	got, err := canonicalNumber(in)
	if _, perr := ddbsize.ParseNumber(in); perr != nil {
		if err == nil {
			t.Fatalf("canonicalNumber(%q) = %q, want an error like ParseNumber's %v", in, got, perr)
		}
		return
	}
	if err != nil {
		t.Fatalf("canonicalNumber(%q): %v", in, err)
	}
	want, ok := new(big.Rat).SetString(in)
	if !ok {
		t.Fatalf("big.Rat cannot parse %q", in)
	}
	back, ok := new(big.Rat).SetString(got)
	if !ok || back.Cmp(want) != 0 {
		t.Fatalf("canonicalNumber(%q) = %q: a different value", in, got)
	}
	if strings.ContainsAny(got, "eE+") || strings.HasPrefix(strings.TrimPrefix(got, "-"), "00") ||
		(strings.Contains(got, ".") && strings.HasSuffix(got, "0")) || strings.HasSuffix(got, ".") || got == "-0" {
		t.Fatalf("canonicalNumber(%q) = %q: not canonical", in, got)
	}
	if again, _ := canonicalNumber(got); again != got {
		t.Fatalf("canonicalNumber(%q) = %q, not a fixed point", got, again)
	}
}

func TestVersions(t *testing.T) {
	base := time.Date(2026, 11, 22, 18, 0, 0, 0, time.UTC)
	var vs []string
	seen := map[string]bool{}
	for i := range 1000 {
		at := base.Add(time.Duration(i/3) * time.Microsecond) // some share a time
		v := newVersion(at)
		if len(v) != versionLen || strings.Contains(v, "#") {
			t.Fatalf("version %q: bad form", v)
		}
		if seen[v] {
			t.Fatalf("version %q repeated", v)
		}
		seen[v] = true
		got, err := versionTime(v)
		if err != nil || !got.Equal(at) {
			t.Fatalf("versionTime(%q) = %v, %v, want %v", v, got, err, at)
		}
		vs = append(vs, v)
	}
	// Lexical order follows time order.
	for i := 1; i < len(vs); i++ {
		ti, _ := versionTime(vs[i])
		tp, _ := versionTime(vs[i-1])
		if ti.After(tp) && vs[i] < vs[i-1] {
			t.Fatalf("%q (at %v) sorts before %q (at %v)", vs[i], ti, vs[i-1], tp)
		}
	}
	if _, err := versionTime("short"); err == nil {
		t.Error("versionTime(short): got nil error")
	}
}

func TestChunkKeyRoundTrip(t *testing.T) {
	v := newVersion(time.Now())
	for _, prefix := range []string{"a", "DynamoDB#Thread1#2012-03-15T20:42:54.023Z", "#", "x#" + v + "#1"} {
		for _, seq := range []int{1, 9, 10, 2731} {
			k := chunkKey(prefix, v, seq)
			p, gv, gs, err := parseChunkKey(k)
			if err != nil || p != prefix || gv != v || gs != seq {
				t.Errorf("parseChunkKey(%q) = %q, %q, %d, %v; want %q, %q, %d", k, p, gv, gs, err, prefix, v, seq)
			}
		}
	}
	for _, bad := range []string{"", "a", "a#1", "a#" + v + "#0", "a#" + v + "#01", "a#" + v + "#-1", "a#" + v + "#x", "a#short#1", v + "#1"} {
		if _, _, _, err := parseChunkKey(bad); !errors.Is(err, errBadChunkKey) {
			t.Errorf("parseChunkKey(%q): got %v, want errBadChunkKey", bad, err)
		}
	}
}

func FuzzParseChunkKey(f *testing.F) {
	v := newVersion(time.Unix(1, 2))
	for _, s := range []string{"a#" + v + "#1", "#" + v + "#12", "a#b#c", "", "##", "a#" + v + "#+1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, k string) {
		prefix, version, seq, err := parseChunkKey(k)
		if err != nil {
			return
		}
		if got := chunkKey(prefix, version, seq); got != k {
			t.Fatalf("parseChunkKey(%q) = %q, %q, %d, which renders %q", k, prefix, version, seq, got)
		}
	})
}

func TestKeyFromParent(t *testing.T) {
	keys := []Key{sKey("a"), sKey2("a#b", "c"), sKey2("a", "b#c"), sKey2("same", "same"),
		{PartitionName: "n", Partition: &types.AttributeValueMemberN{Value: "10"}, SortName: "b", Sort: &types.AttributeValueMemberB{Value: []byte("x")}}}
	for _, k := range keys {
		prefix, err := k.prefix()
		if err != nil {
			t.Fatal(err)
		}
		got, ok := keyFromParent(k.item(), prefix)
		if !ok {
			t.Errorf("keyFromParent(%v): not found", k)
			continue
		}
		if gp, _ := got.prefix(); gp != prefix || !slices.Equal(mapKeys(got.item()), mapKeys(k.item())) {
			t.Errorf("keyFromParent(%v) = %v", k, got)
		}
	}
	if _, ok := keyFromParent(sKey("a").item(), "b"); ok {
		t.Error("keyFromParent with a foreign prefix: got ok")
	}
}

func mapKeys(m map[string]types.AttributeValue) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
