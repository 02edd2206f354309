// Package forumsvc is the forum example's HTTP JSON service, kept apart
// from its main package so the demo can run it in-process.
//
// It is the DynamoDB developer guide's forum, with its three tables:
//
//	Thread       a forum's threads: base (partition) = forum name
//	Reply        a thread's replies: base = "forum#thread", the guide's Reply.Id
//	ReplyChunks  the chunks of replies too long for one item
//
// Thread and Reply are described once, by the shard.Layouts that
// Tables.Layouts returns, and everything is built from them: their
// CreateTable requests (Tables.Inputs), the repo.Repo of each and the
// chunk store behind Reply. Both are sharded with shard.Hash(4) (a popular
// thread's replies arrive on four partitions, not one), with
// ids that sort by time (examples/internal/sortid), so listing a thread
// pages through its replies in the order they were written. A reply's
// message is the repository's LargeField: up to chunk's inline limit it
// stays in the Reply item; beyond that it is gzipped into ReplyChunks
// items written with BatchWriteItem and switched in atomically through
// the Reply item, as the guide's virtual items are. A reader never sees a
// half-written reply.
package forumsvc

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/chunk"
	"github.com/dynashard/dynashard/examples/internal/httpjson"
	"github.com/dynashard/dynashard/examples/internal/sortid"
	"github.com/dynashard/dynashard/repo"
	"github.com/dynashard/dynashard/scatter"
	"github.com/dynashard/dynashard/shard"
)

// Thread is a forum thread with its opening message.
type Thread struct {
	ID        string    `json:"id"` // sort key
	Forum     string    `json:"forum"`
	Subject   string    `json:"subject"`
	Author    string    `json:"author"`
	Message   string    `json:"message"`
	CreatedAt time.Time `json:"created_at"`
	Version   int64     `json:"version"` // create-only: never overwrite a thread
}

// ThreadView is GET .../threads/{thread}: the thread and its reply count.
type ThreadView struct {
	Thread
	Replies int64 `json:"replies"`
}

// Reply is a reply, whatever its length.
type Reply struct {
	ID        string    `json:"id"` // sort key
	Forum     string    `json:"forum"`
	Thread    string    `json:"thread"`
	Author    string    `json:"author"`
	CreatedAt time.Time `json:"created_at"`
	Bytes     int       `json:"bytes"`             // len(Message)
	Message   string    `json:"message,omitempty"` // the LargeField; absent from POST's response
	Version   int64     `json:"version"`
}

// ReplySummary is a reply as listed: its message cut to a preview.
type ReplySummary struct {
	ID        string    `json:"id"`
	Author    string    `json:"author"`
	CreatedAt time.Time `json:"created_at"`
	Bytes     int       `json:"bytes"`
	Preview   string    `json:"preview"` // the first PreviewBytes of the message, cut at a character
}

// NewThread is the body of POST /forums/{forum}/threads.
type NewThread struct {
	Subject string `json:"subject"`
	Author  string `json:"author"`
	Message string `json:"message"`
}

// NewReply is the body of POST .../threads/{thread}/replies.
type NewReply struct {
	Author  string `json:"author"`
	Message string `json:"message"`
}

// ThreadPage and ReplyPage are list responses; Next continues the
// listing and is absent on the last page.
type (
	ThreadPage struct {
		Threads []Thread `json:"threads"`
		Next    string   `json:"next_cursor,omitempty"`
	}
	ReplyPage struct {
		Replies []ReplySummary `json:"replies"`
		Next    string         `json:"next_cursor,omitempty"`
	}
)

// Input limits. A request beyond them gets a 400 naming the field.
const (
	MaxForum         = 64 // bytes of [a-z0-9-]
	MaxSubject       = 200
	MaxAuthor        = 100
	MaxThreadMessage = 16 << 10 // kept in the Thread item
	MaxReply         = 8 << 20  // chunked beyond the inline limit
	PreviewBytes     = 200
	DefaultLimit     = 20
	MaxLimit         = 100
)

const (
	shards        = 4
	attrPartition = "pk"
	attrID        = "id"
	attrVersion   = "version"
	attrMessage   = "message"
	// JSON may escape a byte as six ("\u0000"); this admits any
	// MaxReply-byte message of ordinary text.
	maxReplyBody  = 2*MaxReply + 64<<10
	maxThreadBody = 6*MaxThreadMessage + 4<<10
)

// Tables names the three tables.
type Tables struct{ Thread, Reply, ReplyChunks string }

// TablesWithPrefix returns prefix+"Thread", prefix+"Reply" and
// prefix+"ReplyChunks".
func TablesWithPrefix(prefix string) Tables {
	return Tables{prefix + "Thread", prefix + "Reply", prefix + "ReplyChunks"}
}

// Layouts describes the sharded tables: Thread (base: the forum name) and
// Reply (base: "forum#thread"), each with partition key pk holding
// physical keys "dynamodb.3", sort key id, and a base spread over 4 keys
// by shard.Hash on the id.
func (t Tables) Layouts() (thread, reply shard.Layout) {
	layout := func(name string) shard.Layout {
		return shard.Layout{Table: name, PartitionKey: attrPartition, SortKey: attrID, Strategy: shard.Hash(shards)}
	}
	return layout(t.Thread), layout(t.Reply)
}

// Inputs returns the CreateTable requests of the three tables, on demand:
// Thread and Reply from their Layouts, ReplyChunks with the chunk store's
// simple key ChunkKey. It fails for an empty name, with an error matching
// dynashard.ErrInvalid.
func (t Tables) Inputs() ([]*dynamodb.CreateTableInput, error) {
	thread, reply := t.Layouts()
	var ins []*dynamodb.CreateTableInput
	for _, l := range []shard.Layout{thread, reply} {
		in, err := l.CreateTableInput()
		if err != nil {
			return nil, fmt.Errorf("forumsvc: %w", err)
		}
		ins = append(ins, in)
	}
	if t.ReplyChunks == "" {
		return nil, fmt.Errorf("forumsvc: %w: empty ReplyChunks table name", dynashard.ErrInvalid)
	}
	return append(ins, &dynamodb.CreateTableInput{
		TableName:            aws.String(t.ReplyChunks),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(chunk.DefaultChunkKeyAttribute), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(chunk.DefaultChunkKeyAttribute), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}), nil
}

// Names lists the table names.
func (t Tables) Names() []string { return []string{t.Thread, t.Reply, t.ReplyChunks} }

// Config configures the service. CursorKey is required.
type Config struct {
	// CursorKey signs list cursors (HMAC-SHA256).
	CursorKey []byte
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Log receives server errors. Default log.Default().
	Log *log.Logger
}

// DB is what the service needs of *dynamodb.Client.
type DB interface {
	repo.Client
	chunk.Client
}

// Service serves the forum API. Safe for concurrent use.
type Service struct {
	threads *repo.Repo[Thread]
	replies *repo.Repo[Reply]
	cfg     Config
}

// New returns the service over tables, which must exist (Tables.Inputs).
// It fails for a table name, layout or cursor key the repository or the
// chunk store refuses (errors matching repo.ErrInvalid) and without a
// cursor key.
func New(c DB, tables Tables, cfg Config) (*Service, error) {
	if len(cfg.CursorKey) == 0 {
		return nil, errors.New("forumsvc: no cursor key")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = log.Default()
	}
	threadLayout, replyLayout := tables.Layouts()
	common := func(o *repo.Options) {
		o.Version = attrVersion
		o.CursorKey = cfg.CursorKey
		o.Encoder = func(eo *attributevalue.EncoderOptions) { eo.TagKey = "json" }
		o.Decoder = func(do *attributevalue.DecoderOptions) { do.TagKey = "json" }
	}
	threads, err := repo.New[Thread](c, threadLayout, common, func(o *repo.Options) {
		// Every reply checks its thread exists: a popular thread is read
		// far more often than it is written.
		o.CacheEntries = 10_000
	})
	if err != nil {
		return nil, fmt.Errorf("forumsvc: %w", err)
	}
	// Reply is the chunk store's parent table; gzip because forum text
	// compresses several-fold (the guide's advice for large text).
	store, err := chunk.New(c, replyLayout.Table, tables.ReplyChunks, func(o *chunk.Options) { o.Compression = chunk.Gzip })
	if err != nil {
		return nil, fmt.Errorf("forumsvc: %w", err)
	}
	replies, err := repo.New[Reply](c, replyLayout, common, func(o *repo.Options) {
		o.Large = &repo.LargeField{Attribute: attrMessage, Store: store}
	})
	if err != nil {
		return nil, fmt.Errorf("forumsvc: %w", err)
	}
	return &Service{threads: threads, replies: replies, cfg: cfg}, nil
}

// Handler returns the HTTP API:
//
//	POST /forums/{forum}/threads                         start a thread (201, the Thread)
//	GET  /forums/{forum}/threads?limit=&cursor=          a page of threads, oldest first
//	GET  /forums/{forum}/threads/{thread}                a thread and its reply count
//	POST /forums/{forum}/threads/{thread}/replies        reply (201, the Reply without its message)
//	GET  /forums/{forum}/threads/{thread}/replies?limit=&cursor=  a page of replies with previews
//	GET  /forums/{forum}/threads/{thread}/replies/{reply}  one reply, whole
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	h := func(pattern string, f httpjson.Handler) { mux.Handle(pattern, httpjson.Wrap(s.cfg.Log, f)) }
	h("POST /forums/{forum}/threads", s.createThread)
	h("GET /forums/{forum}/threads", s.listThreads)
	h("GET /forums/{forum}/threads/{thread}", s.getThread)
	h("POST /forums/{forum}/threads/{thread}/replies", s.createReply)
	h("GET /forums/{forum}/threads/{thread}/replies", s.listReplies)
	h("GET /forums/{forum}/threads/{thread}/replies/{reply}", s.getReply)
	return mux
}

func pathForum(r *http.Request) (string, error) {
	f := r.PathValue("forum")
	ok := f != "" && len(f) <= MaxForum
	for _, c := range []byte(f) {
		ok = ok && (c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-')
	}
	if !ok {
		return "", httpjson.BadRequest("forum", "want 1 to %d of a-z, 0-9 and -", MaxForum)
	}
	return f, nil
}

func pathID(r *http.Request, name string) (string, error) {
	id := r.PathValue(name)
	if _, err := sortid.Day(id); err != nil {
		return "", httpjson.BadRequest(name, "want an id such as 20261122-153012482917-9f3ac2e1")
	}
	return id, nil
}

// thread returns the forum and thread named in the path, if it exists.
func (s *Service) thread(r *http.Request) (Thread, error) {
	forum, err := pathForum(r)
	if err != nil {
		return Thread{}, err
	}
	id, err := pathID(r, "thread")
	if err != nil {
		return Thread{}, err
	}
	t, err := s.threads.Get(r.Context(), forum, id)
	if errors.Is(err, repo.ErrNotFound) {
		return Thread{}, httpjson.NotFound("no thread %s in forum %s", id, forum)
	}
	return t, err
}

// replyBase is the base of a thread's replies, the guide's
// "ForumName#Subject" with the thread's id for its subject.
func replyBase(forum, thread string) string { return forum + "#" + thread }

func text(p *httpjson.Problems, field, v string, max int) string {
	v = strings.TrimSpace(v)
	switch {
	case v == "":
		p.Add(field, "required")
	case len(v) > max:
		p.Add(field, "at most %d bytes", max)
	case !utf8.ValidString(v):
		p.Add(field, "not valid UTF-8")
	}
	return v
}

func limitParam(r *http.Request) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return DefaultLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxLimit {
		return 0, httpjson.BadRequest("limit", "want 1 to %d", MaxLimit)
	}
	return n, nil
}

// listErr maps a List error: a cursor the repository rejects was altered,
// forged, or issued for another listing.
func listErr(err error) error {
	if errors.Is(err, repo.ErrInvalidCursor) {
		return httpjson.BadRequest("cursor", "not a cursor this service issued for this listing")
	}
	return err
}

func (s *Service) createThread(r *http.Request) (int, any, error) {
	forum, err := pathForum(r)
	if err != nil {
		return 0, nil, err
	}
	var in NewThread
	if err := httpjson.Decode(r, &in, maxThreadBody); err != nil {
		return 0, nil, err
	}
	var p httpjson.Problems
	now := s.cfg.Now().UTC()
	t := Thread{
		ID: sortid.New(now), Forum: forum, CreatedAt: now,
		Subject: text(&p, "subject", in.Subject, MaxSubject),
		Author:  text(&p, "author", in.Author, MaxAuthor),
		Message: text(&p, "message", in.Message, MaxThreadMessage),
	}
	if err := p.Err(); err != nil {
		return 0, nil, err
	}
	t, err = s.threads.Put(r.Context(), forum, t)
	if errors.Is(err, repo.ErrConflict) {
		return 0, nil, &httpjson.Error{Status: http.StatusConflict, Message: "a thread with this id exists; retry"}
	}
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, t, nil
}

func (s *Service) listThreads(r *http.Request) (int, any, error) {
	forum, err := pathForum(r)
	if err != nil {
		return 0, nil, err
	}
	limit, err := limitParam(r)
	if err != nil {
		return 0, nil, err
	}
	ts, next, err := s.threads.List(r.Context(), forum, limit, scatter.Cursor(r.URL.Query().Get("cursor")))
	if err != nil {
		return 0, nil, listErr(err)
	}
	return http.StatusOK, ThreadPage{Threads: ts, Next: string(next)}, nil
}

func (s *Service) getThread(r *http.Request) (int, any, error) {
	t, err := s.thread(r)
	if err != nil {
		return 0, nil, err
	}
	n, err := s.replies.Count(r.Context(), replyBase(t.Forum, t.ID))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, ThreadView{Thread: t, Replies: n}, nil
}

func (s *Service) createReply(r *http.Request) (int, any, error) {
	t, err := s.thread(r)
	if err != nil {
		return 0, nil, err
	}
	var in NewReply
	if err := httpjson.Decode(r, &in, maxReplyBody); err != nil {
		return 0, nil, err
	}
	var p httpjson.Problems
	now := s.cfg.Now().UTC()
	reply := Reply{
		ID: sortid.New(now), Forum: t.Forum, Thread: t.ID, CreatedAt: now,
		Author: text(&p, "author", in.Author, MaxAuthor),
	}
	// A message is kept as written, spaces and all: only its size is
	// checked.
	switch {
	case strings.TrimSpace(in.Message) == "":
		p.Add("message", "required")
	case len(in.Message) > MaxReply:
		p.Add("message", "at most %d bytes", MaxReply)
	}
	if err := p.Err(); err != nil {
		return 0, nil, err
	}
	reply.Message, reply.Bytes = in.Message, len(in.Message)
	reply, err = s.replies.Put(r.Context(), replyBase(t.Forum, t.ID), reply)
	if errors.Is(err, repo.ErrConflict) {
		return 0, nil, &httpjson.Error{Status: http.StatusConflict, Message: "a reply with this id exists; retry"}
	}
	if err != nil {
		return 0, nil, err
	}
	reply.Message = "" // the client has it; don't send a megabyte back
	return http.StatusCreated, reply, nil
}

func (s *Service) listReplies(r *http.Request) (int, any, error) {
	t, err := s.thread(r)
	if err != nil {
		return 0, nil, err
	}
	limit, err := limitParam(r)
	if err != nil {
		return 0, nil, err
	}
	// List reads every listed reply's chunks, whole, to cut a preview:
	// keep pages of long replies short.
	rs, next, err := s.replies.List(r.Context(), replyBase(t.Forum, t.ID), limit, scatter.Cursor(r.URL.Query().Get("cursor")))
	if err != nil {
		return 0, nil, listErr(err)
	}
	page := ReplyPage{Replies: make([]ReplySummary, len(rs)), Next: string(next)}
	for i, x := range rs {
		page.Replies[i] = ReplySummary{ID: x.ID, Author: x.Author, CreatedAt: x.CreatedAt, Bytes: x.Bytes, Preview: Preview(x.Message)}
	}
	return http.StatusOK, page, nil
}

// Preview returns the first PreviewBytes of m, cut before a character
// that does not fit whole.
func Preview(m string) string {
	if len(m) <= PreviewBytes {
		return m
	}
	cut := PreviewBytes
	for cut > 0 && !utf8.RuneStart(m[cut]) {
		cut--
	}
	return m[:cut]
}

func (s *Service) getReply(r *http.Request) (int, any, error) {
	t, err := s.thread(r)
	if err != nil {
		return 0, nil, err
	}
	id, err := pathID(r, "reply")
	if err != nil {
		return 0, nil, err
	}
	reply, err := s.replies.Get(r.Context(), replyBase(t.Forum, t.ID), id)
	if errors.Is(err, repo.ErrNotFound) {
		return 0, nil, httpjson.NotFound("no reply %s in thread %s", id, t.ID)
	}
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, reply, nil
}

// Client is a typed client of the API, for the demo and the tests.
type Client struct{ httpjson.Client }

func threadPath(forum, thread string) string {
	return "/forums/" + url.PathEscape(forum) + "/threads/" + url.PathEscape(thread)
}

func pageQuery(limit int, cursor string) string {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// CreateThread starts a thread in forum.
func (c *Client) CreateThread(ctx context.Context, forum string, in NewThread) (Thread, error) {
	var t Thread
	err := c.Do(ctx, http.MethodPost, "/forums/"+url.PathEscape(forum)+"/threads", in, &t)
	return t, err
}

// ListThreads reads a page of forum's threads.
func (c *Client) ListThreads(ctx context.Context, forum string, limit int, cursor string) (ThreadPage, error) {
	var p ThreadPage
	err := c.Do(ctx, http.MethodGet, "/forums/"+url.PathEscape(forum)+"/threads"+pageQuery(limit, cursor), nil, &p)
	return p, err
}

// Thread reads a thread and its reply count.
func (c *Client) Thread(ctx context.Context, forum, thread string) (ThreadView, error) {
	var v ThreadView
	err := c.Do(ctx, http.MethodGet, threadPath(forum, thread), nil, &v)
	return v, err
}

// CreateReply replies to a thread.
func (c *Client) CreateReply(ctx context.Context, forum, thread string, in NewReply) (Reply, error) {
	var r Reply
	err := c.Do(ctx, http.MethodPost, threadPath(forum, thread)+"/replies", in, &r)
	return r, err
}

// ListReplies reads a page of a thread's replies.
func (c *Client) ListReplies(ctx context.Context, forum, thread string, limit int, cursor string) (ReplyPage, error) {
	var p ReplyPage
	err := c.Do(ctx, http.MethodGet, threadPath(forum, thread)+"/replies"+pageQuery(limit, cursor), nil, &p)
	return p, err
}

// Reply reads one reply, whole.
func (c *Client) Reply(ctx context.Context, forum, thread, reply string) (Reply, error) {
	var r Reply
	err := c.Do(ctx, http.MethodGet, threadPath(forum, thread)+"/replies/"+url.PathEscape(reply), nil, &r)
	return r, err
}
