package chunk

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard/internal/ddbtest"
)

// guideEnv is the guide's Reply and ReplyChunks tables on one server.
type guideEnv struct {
	c              *dynamodb.Client
	reply, chunks  string
	srv            *ddbtest.Server
	thread1, short Key
}

func newGuideEnv(t *testing.T, srv *ddbtest.Server) *guideEnv {
	t.Helper()
	return &guideEnv{
		srv: srv, c: srv.Client(),
		reply:   srv.Table(t, "Id:S", "ReplyDateTime:S"),
		chunks:  srv.Table(t, "Id:S"),
		thread1: replyKey("DynamoDB#Thread1", "2012-03-15T20:42:54.023Z"),
		short:   replyKey("DynamoDB#Thread2", "2012-03-21T20:41:23.192Z"),
	}
}

func replyKey(id, at string) Key {
	return Key{PartitionName: "Id", Partition: &types.AttributeValueMemberS{Value: id},
		SortName: "ReplyDateTime", Sort: &types.AttributeValueMemberS{Value: at}}
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

func (g *guideEnv) put(t *testing.T, table string, item map[string]types.AttributeValue) {
	t.Helper()
	if _, err := g.c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: &table, Item: item}); err != nil {
		t.Fatal(err)
	}
}

// writeGuideItems writes, with raw PutItem, the items the guide shows:
// Thread1's reply in three chunks (written in the guide's order 1, 3, 2),
// Thread2's short message inline. parts are Thread1's chunks.
func (g *guideEnv) writeGuideItems(t *testing.T, parts []string) {
	t.Helper()
	g.put(t, g.reply, map[string]types.AttributeValue{
		"Id": s("DynamoDB#Thread1"), "ReplyDateTime": s("2012-03-15T20:42:54.023Z"),
		"ChunkCount": n(strconv.Itoa(len(parts))), "ChunkVersion": n("1"), "PostedBy": s("User A"),
	})
	order := []int{0}
	for i := len(parts) - 1; i > 0; i-- {
		order = append(order, i)
	}
	for _, i := range order {
		g.put(t, g.chunks, map[string]types.AttributeValue{
			"Id":      s(fmt.Sprintf("DynamoDB#Thread1#2012-03-15T20:42:54.023Z#1#%d", i+1)),
			"Message": s(parts[i]),
		})
	}
	g.put(t, g.reply, map[string]types.AttributeValue{
		"Id": s("DynamoDB#Thread2"), "ReplyDateTime": s("2012-03-21T20:41:23.192Z"), "Message": s("short message"),
	})
}

// guideRead reads key as a reader that knows only the guide: GetItem the
// parent; without ChunkCount the text is its Message; otherwise
// BatchGetItem "<Id>#<ReplyDateTime>#<ChunkVersion>#1..ChunkCount" and
// concatenate Message in sequence order. A missing chunk (the version was
// replaced under it) makes it start over, as such a reader must.
func (g *guideEnv) guideRead(ctx context.Context, key Key) (string, bool, error) {
	for range 20 {
		out, err := g.c.GetItem(ctx, &dynamodb.GetItemInput{TableName: &g.reply, Key: key.item()})
		if err != nil {
			return "", false, err
		}
		if out.Item == nil {
			return "", false, nil
		}
		count, ok := out.Item["ChunkCount"].(*types.AttributeValueMemberN)
		if !ok {
			m, _ := out.Item["Message"].(*types.AttributeValueMemberS)
			if m == nil {
				return "", false, errors.New("parent has neither ChunkCount nor Message")
			}
			return m.Value, true, nil
		}
		chunks, _ := strconv.Atoi(count.Value)
		if chunks < 1 {
			// BatchGetItem of no keys is a ValidationException.
			return "", false, fmt.Errorf("ChunkCount %d", chunks)
		}
		version := out.Item["ChunkVersion"].(*types.AttributeValueMemberN).Value
		id := key.Partition.(*types.AttributeValueMemberS).Value + "#" + key.Sort.(*types.AttributeValueMemberS).Value
		var keys []map[string]types.AttributeValue
		for i := 1; i <= chunks; i++ {
			keys = append(keys, map[string]types.AttributeValue{"Id": s(fmt.Sprintf("%s#%s#%d", id, version, i))})
		}
		parts := map[string]string{}
		for lo := 0; lo < len(keys); lo += 100 {
			req := map[string]types.KeysAndAttributes{g.chunks: {Keys: keys[lo:min(lo+100, len(keys))]}}
			for len(req) > 0 {
				got, err := g.c.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
				if err != nil {
					return "", false, err
				}
				for _, it := range got.Responses[g.chunks] {
					parts[it["Id"].(*types.AttributeValueMemberS).Value] = it["Message"].(*types.AttributeValueMemberS).Value
				}
				req = got.UnprocessedKeys
			}
		}
		if len(parts) < chunks {
			continue // replaced while being read: start over
		}
		var b strings.Builder
		for i := 1; i <= chunks; i++ {
			b.WriteString(parts[fmt.Sprintf("%s#%s#%d", id, version, i)])
		}
		return b.String(), true, nil
	}
	return "", false, errors.New("replaced on every attempt")
}

// TestGuideRead: items written exactly as the guide shows them, with raw
// PutItem, read back byte for byte by a Store in the guide's layout and by
// one that only reads it (the migration path), with Get, Open and Stat.
func TestGuideRead(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		ctx := context.Background()
		g := newGuideEnv(t, srv)
		parts := []string{"first part of long message text...", "...second part of long message text...", "...third part of long message text"}
		g.writeGuideItems(t, parts)
		long := strings.Join(parts, "")
		readers := map[string]*Store{
			"GuideLayout": newStore(t, g.c, g.reply, g.chunks, GuideLayout),
			"read only":   newStore(t, g.c, g.reply, g.chunks, func(o *Options) { o.ChunkKeyAttribute = "Id"; o.Guide = &Guide{} }),
		}
		for name, st := range readers {
			t.Run(name, func(t *testing.T) {
				got, info, err := st.Get(ctx, g.thread1)
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != long {
					t.Errorf("Get = %q, want %q", got, long)
				}
				want := Info{Version: "1", Size: int64(len(long)), StoredSize: int64(len(long)), Chunks: 3, Guide: true, NoChecksum: true,
					Attributes: map[string]types.AttributeValue{"PostedBy": s("User A")}}
				if d := cmp.Diff(want, info, cmp.AllowUnexported(types.AttributeValueMemberS{})); d != "" {
					t.Errorf("Get Info (-want +got):\n%s", d)
				}
				stat, err := st.Stat(ctx, g.thread1)
				if err != nil {
					t.Fatal(err)
				}
				if stat.Size != -1 || stat.StoredSize != -1 || !stat.NoChecksum || stat.Chunks != 3 {
					t.Errorf("Stat = %+v, want Size and StoredSize -1 (no length recorded), NoChecksum, 3 chunks", stat)
				}
				r, err := st.Open(ctx, g.thread1)
				if err != nil {
					t.Fatal(err)
				}
				streamed, err := io.ReadAll(r)
				r.Close()
				if err != nil || string(streamed) != long {
					t.Errorf("Open: %q, %v; want %q", streamed, err, long)
				}
				got, info, err = st.Get(ctx, g.short)
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != "short message" || info.Version != "" || info.Chunks != 0 || !info.Guide || info.Size != int64(len(got)) {
					t.Errorf("short message: %q, %+v", got, info)
				}
				if _, ok := info.Attributes["Message"]; ok {
					t.Errorf("Info.Attributes holds the inline Message")
				}
			})
		}

		// Without Options.Guide the numeric ChunkVersion is not taken for
		// this package's layout.
		plain := newStore(t, g.c, g.reply, g.chunks, func(o *Options) { o.ChunkKeyAttribute = "Id" })
		var ce *CorruptError
		if _, _, err := plain.Get(ctx, g.thread1); !errors.As(err, &ce) {
			t.Errorf("Get without Options.Guide: %v, want a *CorruptError", err)
		}
		if _, _, err := plain.Get(ctx, g.short); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get of the short message without Options.Guide: %v, want ErrNotFound", err)
		}
	})
}

// TestGuideReadVerifies: what a guide-layout read checks: every one of
// ChunkCount chunks present, the length where ChunkBytes records one, and
// no text in Message beside chunks.
func TestGuideReadVerifies(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		ctx := context.Background()
		g := newGuideEnv(t, srv)
		st := newStore(t, g.c, g.reply, g.chunks, GuideLayout)
		g.writeGuideItems(t, []string{"aaaa", "bbbb", "cccc"})
		if _, err := g.c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &g.chunks,
			Key: map[string]types.AttributeValue{"Id": s("DynamoDB#Thread1#2012-03-15T20:42:54.023Z#1#2")}}); err != nil {
			t.Fatal(err)
		}
		var ce *CorruptError
		if _, _, err := st.Get(ctx, g.thread1); !errors.As(err, &ce) {
			t.Errorf("Get with chunk 2 missing: %v, want a *CorruptError", err)
		} else if ce.Seq != 2 || ce.Version != "1" {
			t.Errorf("Get with chunk 2 missing: corrupt error of chunk %d of version %q, want chunk 2 of version \"1\"", ce.Seq, ce.Version)
		}

		g.writeGuideItems(t, []string{"aaaa", "bbbb", "cccc"})
		if _, err := g.c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &g.reply, Key: g.thread1.item(),
			UpdateExpression: aws.String("SET ChunkBytes = :n"), ExpressionAttributeValues: map[string]types.AttributeValue{":n": n("13")}}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.Get(ctx, g.thread1); !errors.As(err, &ce) {
			t.Errorf("Get with ChunkBytes 13 for 12 bytes: %v, want a *CorruptError", err)
		}

		// ChunkCount with a non-empty Message holds two payloads: the
		// package doc says which reads are refused.
		setMessage := func(m string) {
			t.Helper()
			g.writeGuideItems(t, []string{"aaaa", "bbbb", "cccc"})
			if _, err := g.c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &g.reply, Key: g.thread1.item(),
				UpdateExpression: aws.String("SET Message = :m"), ExpressionAttributeValues: map[string]types.AttributeValue{":m": s(m)}}); err != nil {
				t.Fatal(err)
			}
		}
		setMessage("also inline")
		if _, _, err := st.Get(ctx, g.thread1); !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
			t.Errorf("Get of ChunkCount 3 with a Message: %v, want a *CorruptError", err)
		}
		setMessage("") // the guide's blank Message beside chunks
		if data, _, err := st.Get(ctx, g.thread1); err != nil || string(data) != "aaaabbbbcccc" {
			t.Errorf("Get of ChunkCount 3 with an empty Message: %q, %v; want the chunks' text", data, err)
		}
	})
}

// textPayload is a payload of about n bytes of multi-byte UTF-8 text, whose
// first line names value, so that a reader can tell which write a text
// came from and whether it is whole.
func textPayload(value string, n int) string {
	r := rand.New(rand.NewPCG(uint64(len(value)), uint64(n)))
	for _, c := range value {
		r = rand.New(rand.NewPCG(r.Uint64(), uint64(c)))
	}
	words := []string{"Grüße ", "世界 ", "🙂", "chunk ", "é", "ß", "DynamoDB ", "\n"}
	var b strings.Builder
	b.WriteString(value + "\n")
	for b.Len() < n {
		b.WriteString(words[r.IntN(len(words))])
	}
	return b.String()
}

// guideValue is the text a writer stores for value: textPayload of a
// length derived from value, from inline to a dozen 64-byte chunks.
func guideValue(value string) string {
	h := 0
	for _, c := range value {
		h = h*31 + int(c)
	}
	return textPayload(value, 20+h%700)
}

// scanKeys returns the keys of table, sorted.
func scanKeys(t *testing.T, c *dynamodb.Client, table, keyName string) []string {
	t.Helper()
	var keys []string
	in := &dynamodb.ScanInput{TableName: &table, ConsistentRead: aws.Bool(true)}
	for {
		out, err := c.Scan(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range out.Items {
			keys = append(keys, it[keyName].(*types.AttributeValueMemberS).Value)
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	slices.Sort(keys)
	return keys
}

// TestGuideInvalid: combinations no Store can work with fail New with
// ErrInvalid; text a Message S cannot hold fails Put before any request,
// and PutReader with no chunk left behind.
func TestGuideInvalid(t *testing.T) {
	c := (&dynamodb.Client{})
	for name, fn := range map[string]func(*Options){
		"gzip":                     func(o *Options) { GuideLayout(o); o.Compression = Gzip },
		"zstd":                     func(o *Options) { GuideLayout(o); o.Compression = Zstd },
		"DataType N":               func(o *Options) { o.Guide = &Guide{DataType: types.ScalarAttributeTypeN} },
		"InlineType BOOL":          func(o *Options) { o.Guide = &Guide{InlineType: "BOOL"} },
		"DataAttribute reserved":   func(o *Options) { o.Guide = &Guide{DataAttribute: "ChunkVersion"} },
		"InlineAttribute reserved": func(o *Options) { o.Guide = &Guide{InlineAttribute: "ChunkCount"} },
		"DataAttribute is the key": func(o *Options) { GuideLayout(o); o.Guide.DataAttribute = "Id" },
		"DataAttribute Parent":     func(o *Options) { o.Guide = &Guide{DataAttribute: "Parent"} },
		"long name":                func(o *Options) { o.Guide = &Guide{InlineAttribute: strings.Repeat("m", 256)} },
		"ChunkSize below a rune":   func(o *Options) { GuideLayout(o); o.ChunkSize = 3 },
	} {
		if _, err := New(c, "Reply", "ReplyChunks", fn); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: New: %v, want ErrInvalid", name, err)
		}
	}
	// New keeps a copy of Options.Guide.
	g := &Guide{Write: true}
	st, err := New(c, "Reply", "ReplyChunks", func(o *Options) { o.Guide = g })
	if err != nil {
		t.Fatal(err)
	}
	g.DataType, g.Write = types.ScalarAttributeTypeB, false
	if !st.guideWrites() || st.opts.Guide.DataType != types.ScalarAttributeTypeS {
		t.Errorf("Store follows the caller's Guide after New: %+v", st.opts.Guide)
	}
	// A call's optFns change its own copy only.
	st.Get(context.Background(), Key{}, func(o *Options) { o.Guide.DataType = types.ScalarAttributeTypeB })
	if st.opts.Guide.DataType != types.ScalarAttributeTypeS {
		t.Errorf("a Get's optFns changed the Store's Guide: %+v", st.opts.Guide)
	}
	// Reading only, compression stays allowed: Put writes this package's layout.
	if _, err := New(c, "Reply", "ReplyChunks", func(o *Options) { o.Guide = &Guide{}; o.Compression = Zstd }); err != nil {
		t.Errorf("Guide without Write, with Zstd: %v", err)
	}

	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		ctx := context.Background()
		g := newGuideEnv(t, srv)
		p := newProbe()
		st := newStore(t, srv.Client(p.option), g.reply, g.chunks, GuideLayout, func(o *Options) { o.ChunkSize = 64 })
		bad := append([]byte(textPayload("bad", 300)), 0xff)
		if _, err := st.Put(ctx, g.thread1, bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("Put of invalid UTF-8: %v, want ErrInvalid", err)
		}
		if p.total() != 0 {
			t.Errorf("Put of invalid UTF-8 sent %d requests, want 0", p.total())
		}
		if _, err := st.PutReader(ctx, g.thread1, io.MultiReader(strings.NewReader(textPayload("bad", 300)), bytes.NewReader([]byte{0xe4, 0xb8}))); !errors.Is(err, ErrInvalid) {
			t.Errorf("PutReader of a truncated rune: %v, want ErrInvalid", err)
		}
		if keys := scanKeys(t, g.c, g.chunks, "Id"); len(keys) != 1 || !strings.HasSuffix(keys[0], "#ChunkVersion") {
			t.Errorf("chunk table after failed PutReader: %q, want only the counter", keys)
		}
		if _, _, err := st.Get(ctx, g.thread1); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get after failed Puts: %v, want ErrNotFound", err)
		}
		if _, err := st.Put(ctx, g.thread1, []byte("x"), func(o *PutOptions) {
			o.Attributes = map[string]types.AttributeValue{"Message": s("mine")}
		}); !errors.Is(err, ErrReserved) {
			t.Errorf("Put with a caller attribute Message: %v, want ErrReserved", err)
		}
	})
}
