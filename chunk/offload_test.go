package chunk

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// These tests need no server: they check how offloaded payloads are named
// and recorded, and what New and Resolve refuse. The offload itself is
// tested against s3rver in module s3blob.

func offlineStore(t testing.TB, optFns ...func(*Options)) *Store {
	t.Helper()
	st, err := New(dynamodb.New(dynamodb.Options{}), "Thread", "ThreadChunks", optFns...)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestObjectKeyAndMetadata(t *testing.T) {
	st := offlineStore(t)
	v := newVersion(st.clock())
	for _, key := range []Key{
		{PartitionName: "Forum", Partition: &types.AttributeValueMemberS{Value: "DynamoDB"}, SortName: "Subject", Sort: &types.AttributeValueMemberS{Value: "Thread1"}},
		{PartitionName: "pk", Partition: &types.AttributeValueMemberN{Value: "12.5"}, SortName: "sk", Sort: &types.AttributeValueMemberB{Value: []byte{0xff, 0}}},
		{PartitionName: "pk", Partition: &types.AttributeValueMemberS{Value: strings.Repeat("é", 500)}},
	} {
		rendered, err := key.prefix()
		if err != nil {
			t.Fatal(err)
		}
		k := st.objectKey(key, rendered, v)
		if len(k) > maxObjectKey || !strings.HasPrefix(k, "dynashard/Thread/") {
			t.Errorf("%v: object key %q", key, k)
		}
		if got, ok := objectVersion(k); !ok || got != v {
			t.Errorf("%v: version of %q is %q, %v", key, k, got, ok)
		}
		meta, err := st.objectMetadata(key)
		if err != nil {
			t.Fatal(err)
		}
		back, ok := st.keyFromMetadata(meta)
		if !ok || back.cacheID() != key.cacheID() {
			t.Errorf("%v: metadata %v decodes to %v, %v", key, meta, back, ok)
		}
		other := offlineStore(t)
		other.parents = "Other"
		if _, ok := other.keyFromMetadata(meta); ok {
			t.Errorf("%v: another table's store accepts the metadata", key)
		}
	}
	long := Key{PartitionName: "pk", Partition: &types.AttributeValueMemberS{Value: strings.Repeat("y", 1600)}}
	if _, err := st.objectMetadata(long); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("metadata of a 1,600-byte key: %v, want ErrInvalidKey", err)
	}
	if _, ok := objectVersion("dynashard/Thread/notes.txt"); ok {
		t.Errorf("a key without a version parses")
	}
}

func TestObjectOptionsRejected(t *testing.T) {
	for name, f := range map[string]func(*Options){
		"threshold": func(o *Options) { o.ObjectThreshold = maxObjectThreshold + 1 },
		"prefix":    func(o *Options) { o.ObjectPrefix = strings.Repeat("p", maxObjectPrefix+1) },
		"utf8":      func(o *Options) { o.ObjectPrefix = "\xff" },
	} {
		if _, err := New(dynamodb.New(dynamodb.Options{}), "a", "b", f); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "Options.Object") {
			t.Errorf("%s: %v, want ErrInvalid naming the option", name, err)
		}
	}
}

// TestOffloadedParentContradictions: a parent naming an object must record
// ChunkCount -1 and no inline data, and ChunkCount -1 without an object is
// damage, not an empty payload.
func TestOffloadedParentContradictions(t *testing.T) {
	st := offlineStore(t)
	key := Key{PartitionName: "pk", Partition: &types.AttributeValueMemberS{Value: "k"}}
	base := func() map[string]types.AttributeValue {
		return map[string]types.AttributeValue{
			"pk":         key.Partition,
			attrVersion:  &types.AttributeValueMemberS{Value: newVersion(st.clock())},
			attrCount:    &types.AttributeValueMemberN{Value: objectCount},
			attrSize:     &types.AttributeValueMemberN{Value: "0"},
			attrStored:   &types.AttributeValueMemberN{Value: "0"},
			attrSHA:      &types.AttributeValueMemberB{Value: make([]byte, 32)},
			attrObject:   &types.AttributeValueMemberS{Value: "dynashard/Thread/k/v"},
			"CallerAttr": &types.AttributeValueMemberS{Value: "x"},
		}
	}
	for name, change := range map[string]func(map[string]types.AttributeValue){
		"count 0 with object": func(m map[string]types.AttributeValue) { m[attrCount] = &types.AttributeValueMemberN{Value: "0"} },
		"count -1 no object":  func(m map[string]types.AttributeValue) { delete(m, attrObject) },
		"object and inline":   func(m map[string]types.AttributeValue) { m[attrInline] = &types.AttributeValueMemberB{Value: []byte{}} },
	} {
		item := base()
		change(item)
		_, _, err := st.Resolve(context.Background(), key, item)
		var ce *CorruptError
		if !errors.As(err, &ce) {
			t.Errorf("%s: %v, want a *CorruptError", name, err)
		}
	}
	p, ok, err := st.parseParent(key, base())
	if err != nil || !ok || p.Object != "dynashard/Thread/k/v" || p.Chunks != 0 || p.Attributes["CallerAttr"] == nil || p.Attributes[attrObject] != nil {
		t.Errorf("parse: %+v, %v, %v", p, ok, err)
	}
}

// FuzzObjectMetadata feeds arbitrary object metadata and object keys, as a
// bucket shared with other writers may hold, to what Sweep parses: it must
// never panic, and a key it accepts must record back to the same metadata.
func FuzzObjectMetadata(f *testing.F) {
	st := offlineStore(f)
	good, err := st.objectMetadata(Key{PartitionName: "Forum", Partition: &types.AttributeValueMemberS{Value: "DynamoDB"},
		SortName: "Subject", Sort: &types.AttributeValueMemberN{Value: "12"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good[metaTable], good[metaParent], "dynashard/Thread/DynamoDB/"+newVersion(st.clock()))
	f.Add("VGhyZWFk", "W3sibiI6IkEiLCJ0IjoiQiIsInYiOiIhIn1d", "/")
	f.Add("", "", "")
	f.Fuzz(func(t *testing.T, table, parent, objectKey string) {
		objectVersion(objectKey)
		key, ok := st.keyFromMetadata(map[string]string{metaTable: table, metaParent: parent})
		if !ok {
			return
		}
		again, err := st.objectMetadata(key)
		if err != nil {
			return // valid as a key, too long for S3's metadata: Put refuses it
		}
		back, ok := st.keyFromMetadata(again)
		if !ok || !sameKey(back, key) {
			t.Fatalf("key %v decoded from metadata does not survive a round trip: %v, %v", key, back, ok)
		}
	})
}

func sameKey(a, b Key) bool {
	pa, err1 := a.prefix()
	pb, err2 := b.prefix()
	return err1 == nil && err2 == nil && pa == pb && a.PartitionName == b.PartitionName && a.SortName == b.SortName
}

// FuzzParseParent feeds parent items of any shape (a table written by
// other code, in either layout) to the parser every read starts with: it
// must never panic, and what it accepts must not contradict itself.
func FuzzParseParent(f *testing.F) {
	stores := []*Store{offlineStore(f), offlineStore(f, GuideLayout)}
	key := Key{PartitionName: "Id", Partition: &types.AttributeValueMemberS{Value: "DynamoDB#Thread1"}}
	f.Add("1", true, "2", "10", "10", []byte("0123456789abcdef0123456789abcdef"), "", "", "")
	f.Add("0ABC", false, "0", "3", "3", []byte{}, "", "abc", "")
	f.Add("", false, "-1", "5", "5", []byte{1}, "gzip", "", "dynashard/Thread/x/0ABC")
	f.Fuzz(func(t *testing.T, version string, versionN bool, count, size, stored string, sum []byte, encoding, message, object string) {
		item := map[string]types.AttributeValue{}
		if version != "" {
			if versionN {
				item[attrVersion] = &types.AttributeValueMemberN{Value: version}
			} else {
				item[attrVersion] = &types.AttributeValueMemberS{Value: version}
			}
		}
		for name, v := range map[string]string{attrCount: count, attrSize: size, attrStored: stored} {
			if v != "" {
				item[name] = &types.AttributeValueMemberN{Value: v}
			}
		}
		if sum != nil {
			item[attrSHA] = &types.AttributeValueMemberB{Value: sum}
		}
		if encoding != "" {
			item[attrEncoding] = &types.AttributeValueMemberS{Value: encoding}
		}
		if message != "" {
			item[DefaultGuideAttribute] = &types.AttributeValueMemberS{Value: message}
			item[attrInline] = &types.AttributeValueMemberB{Value: []byte(message)}
		}
		if object != "" {
			item[attrObject] = &types.AttributeValueMemberS{Value: object}
		}
		for _, st := range stores {
			p, ok, err := st.parseParent(key, item)
			if err != nil || !ok {
				continue
			}
			if p.Chunks < 0 || p.StoredSize < -1 || p.Size < -1 {
				t.Fatalf("accepted a parent with %d chunks, stored size %d, size %d: %v", p.Chunks, p.StoredSize, p.Size, item)
			}
		}
	})
}
