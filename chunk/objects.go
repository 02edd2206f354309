package chunk

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/chunkhook"
	"github.com/dynashard/dynashard/internal/errs"
)

// ObjectStore is where Options.Objects keeps payloads offloaded from
// DynamoDB: a bucket of an object store such as Amazon S3. Module
// github.com/dynashard/dynashard/s3blob implements it on *s3.Client, so
// that programs that do not offload never import the S3 SDK. Keys are
// never reused: every Put writes a key of its own and nothing overwrites
// an object.
type ObjectStore interface {
	// Put stores body, read to io.EOF, under key with the user metadata
	// meta (lower-case names, ASCII values, 2 KB at most in all). When it
	// fails, nothing must be readable under key (an incomplete multipart
	// upload may remain, as S3 leaves it). An error from body is returned,
	// wrapped.
	Put(ctx context.Context, key string, body io.Reader, meta map[string]string) error
	// GetRange returns n bytes of the object from offset off (n > 0, the
	// range within the object). An absent object is an error matching
	// fs.ErrNotExist.
	GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error)
	// Metadata returns the user metadata Put stored with the object. An
	// absent object is an error matching fs.ErrNotExist.
	Metadata(ctx context.Context, key string) (map[string]string, error)
	// Delete deletes the objects; absent ones are no error.
	Delete(ctx context.Context, keys []string) error
	// List calls fn with the objects whose keys begin with prefix, one page
	// at a time, in key order, and stops at fn's first error.
	List(ctx context.Context, prefix string, fn func([]ObjectInfo) error) error
}

// ObjectInfo is an object as ObjectStore.List reports it.
type ObjectInfo struct {
	Key          string
	Size         int64
	LastModified time.Time
}

// DefaultObjectThreshold is the payload size from which a Store with
// Options.Objects offloads: 1 MiB, which costs 1,024 write units in
// DynamoDB every time it is written, against one PUT request.
const DefaultObjectThreshold = 1 << 20

// maxObjectThreshold bounds Options.ObjectThreshold: PutReader holds up to
// that many bytes to decide where a payload goes.
const maxObjectThreshold = 64 << 20

// maxObjectPrefix bounds Options.ObjectPrefix, leaving most of S3's
// 1,024-byte key to the parent's key and the version.
const maxObjectPrefix = 512

// maxObjectKey is S3's limit on an object key, in bytes.
const maxObjectKey = 1024

// maxMetadata is S3's limit on an object's user metadata: names and values,
// in bytes.
const maxMetadata = 2048

// objectWindow is how many stored bytes one ranged GET of a Reader asks
// for: a Reader holds at most that much of an object.
const objectWindow = 8 << 20

const (
	attrObject  = "ChunkObject" // S: the object holding the payload, if offloaded
	objectCount = "-1"          // ChunkCount of an offloaded payload
	metaParent  = "dynashard-parent"
	metaTable   = "dynashard-table"
)

func init() {
	chunkhook.SetClock = func(st any, now func() time.Time) { st.(*Store).now = now }
}

// resolveObjectOptions checks and completes the offload fields of o.
func resolveObjectOptions(method string, o Options) (Options, error) {
	if o.ObjectThreshold == 0 {
		o.ObjectThreshold = DefaultObjectThreshold
	}
	switch {
	case o.Objects != nil && errs.IsNil(o.Objects):
		return o, invalid(method, "Options.Objects is a nil %T", o.Objects)
	case o.Objects != nil && o.Guide != nil && o.Guide.Write:
		// Readers that know only the guide's layout would find no payload.
		return o, invalid(method, "Options.Objects with Options.Guide.Write: the guide's layout cannot record an object")
	case o.ObjectThreshold > maxObjectThreshold:
		return o, invalid(method, "Options.ObjectThreshold %d above %d", o.ObjectThreshold, maxObjectThreshold)
	case len(o.ObjectPrefix) > maxObjectPrefix:
		return o, invalid(method, "Options.ObjectPrefix of %d bytes, limit %d", len(o.ObjectPrefix), maxObjectPrefix)
	case !utf8.ValidString(o.ObjectPrefix):
		return o, invalid(method, "Options.ObjectPrefix %q is not valid UTF-8", o.ObjectPrefix)
	}
	return o, nil
}

// offloads reports whether a payload of size bytes goes to Objects.
func (s *Store) offloads(size int64) bool {
	return s.opts.Objects != nil && (s.opts.ObjectThreshold < 0 || size >= s.opts.ObjectThreshold)
}

// objectPrefix begins every object key of this store.
func (s *Store) objectPrefix() string {
	if s.opts.ObjectPrefix != "" {
		return s.opts.ObjectPrefix
	}
	return "dynashard/" + s.parents + "/"
}

// objectKey names the object of one version of key: the prefix, the
// parent's rendered key (its chunk-key prefix) if it is made of characters
// safe in any S3 key and short enough, else "sha256-" and a hash of the
// key, then '/' and the version.
func (s *Store) objectKey(key Key, rendered, version string) string {
	base := s.objectPrefix()
	if len(base)+len(rendered)+1+versionLen <= maxObjectKey && safeObjectName(rendered) {
		return base + rendered + "/" + version
	}
	sum := sha256.Sum256([]byte(key.cacheID()))
	return base + "sha256-" + hex.EncodeToString(sum[:]) + "/" + version
}

// safeObjectName reports whether s uses only the characters S3 documents
// as safe in keys, and '#'.
func safeObjectName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!-_.*'()#", c) >= 0) {
			return false
		}
	}
	return true
}

// objectVersion returns the version an object key ends with.
func objectVersion(k string) (string, bool) {
	i := strings.LastIndexByte(k, '/')
	if i < 0 {
		return "", false
	}
	v := k[i+1:]
	if _, err := versionTime(v); err != nil {
		return "", false
	}
	return v, true
}

// keyValue is one attribute of a parent key as the object metadata records
// it.
type keyValue struct {
	Name string `json:"n"`
	Type string `json:"t"` // S, N or B
	S    string `json:"v"` // B values in standard base64
}

// objectMetadata returns the metadata of key's objects: the parent table
// and the parent's key, base64url-encoded JSON, for Sweep and for anyone
// maintaining the bucket. A key too long for S3's 2 KB of metadata fails
// with ErrInvalidKey.
func (s *Store) objectMetadata(key Key) (map[string]string, error) {
	var kv []keyValue
	for _, a := range []struct {
		name string
		v    types.AttributeValue
	}{{key.PartitionName, key.Partition}, {key.SortName, key.Sort}} {
		switch v := a.v.(type) {
		case *types.AttributeValueMemberS:
			kv = append(kv, keyValue{a.name, "S", v.Value})
		case *types.AttributeValueMemberN:
			kv = append(kv, keyValue{a.name, "N", v.Value})
		case *types.AttributeValueMemberB:
			kv = append(kv, keyValue{a.name, "B", base64.StdEncoding.EncodeToString(v.Value)})
		}
	}
	b, err := json.Marshal(kv)
	if err != nil {
		return nil, fmt.Errorf("%w: key %v: %w", ErrInvalidKey, key, err)
	}
	meta := map[string]string{
		metaParent: base64.RawURLEncoding.EncodeToString(b),
		metaTable:  base64.RawURLEncoding.EncodeToString([]byte(s.parents)),
	}
	n := 0
	for k, v := range meta {
		n += len(k) + len(v)
	}
	if n > maxMetadata {
		return nil, fmt.Errorf("%w: key %v: recording it in the object's metadata takes %d bytes, S3 allows %d",
			ErrInvalidKey, key, n, maxMetadata)
	}
	return meta, nil
}

// keyFromMetadata decodes what objectMetadata recorded; ok is false for
// metadata of another table or not written by this package.
func (s *Store) keyFromMetadata(meta map[string]string) (key Key, ok bool) {
	table, err := base64.RawURLEncoding.DecodeString(meta[metaTable])
	if err != nil || string(table) != s.parents {
		return Key{}, false
	}
	b, err := base64.RawURLEncoding.DecodeString(meta[metaParent])
	if err != nil {
		return Key{}, false
	}
	var kv []keyValue
	if json.Unmarshal(b, &kv) != nil || len(kv) < 1 || len(kv) > 2 {
		return Key{}, false
	}
	vals := make([]types.AttributeValue, len(kv))
	for i, a := range kv {
		switch a.Type {
		case "S":
			vals[i] = &types.AttributeValueMemberS{Value: a.S}
		case "N":
			vals[i] = &types.AttributeValueMemberN{Value: a.S}
		case "B":
			d, err := base64.StdEncoding.DecodeString(a.S)
			if err != nil {
				return Key{}, false
			}
			vals[i] = &types.AttributeValueMemberB{Value: d}
		default:
			return Key{}, false
		}
	}
	key = Key{PartitionName: kv[0].Name, Partition: vals[0]}
	if len(kv) == 2 {
		key.SortName, key.Sort = kv[1].Name, vals[1]
	}
	return key, key.validate() == nil
}

// sourceBody is a source's stored stream as an io.Reader.
type sourceBody struct {
	src    chunkSource
	cur    []byte
	eof    bool
	failed error // from the payload's reader, or MaxSize exceeded
}

func (b *sourceBody) Read(p []byte) (int, error) {
	for len(b.cur) == 0 {
		switch {
		case b.failed != nil:
			return 0, b.failed
		case b.eof:
			return 0, io.EOF
		}
		c, err := b.src.next()
		b.cur = c
		switch {
		case err == io.EOF:
			b.eof = true
		case err != nil:
			b.failed = err
		}
	}
	n := copy(p, b.cur)
	b.cur = b.cur[n:]
	return n, nil
}

// objects is the medium of a payload offloaded to Options.Objects: one
// object per version, uploaded whole, read with ranged GETs, swept by
// listing the store's prefix.
type objects struct{}

// store uploads src's stored stream as w's object.
func (objects) store(ctx context.Context, w *write, src chunkSource, _ []byte) error {
	body := &sourceBody{src: src}
	err := w.s.opts.Objects.Put(ctx, w.object, body, w.meta)
	switch {
	case body.failed != nil:
		return w.sourceError(body.failed)
	case err != nil:
		return fmt.Errorf("chunk: put %v: uploading object %s: %w", w.key, w.object, err)
	}
	return nil
}

func (objects) more(r *Reader) bool { return r.at < r.p.StoredSize }

func (objects) remove(ctx context.Context, s *Store, ids []string) error {
	if s.opts.Objects == nil {
		return nil // a Store without Objects leaves them to one with
	}
	return s.opts.Objects.Delete(ctx, ids)
}

func (objects) ids(_ string, pl placement) []string { return []string{pl.object} }

// fetch reads the next window of the Reader's object with one ranged GET,
// or returns io.EOF after the last. A missing object is handled as a
// missing chunk is (Reader.missing).
func (objects) fetch(r *Reader) ([][]byte, error) {
	s := r.s
	if s.opts.Objects == nil {
		return nil, streamError{fmt.Errorf("chunk: get %v: the payload is in object %q, and Options.Objects is nil", r.key, r.p.Object)}
	}
	if r.at >= r.p.StoredSize {
		return nil, io.EOF
	}
	n := min(objectWindow, r.p.StoredSize-r.at)
	buf := make([]byte, n)
	body, err := s.opts.Objects.GetRange(r.ctx, r.p.Object, r.at, n)
	if err == nil {
		_, err = io.ReadFull(body, buf)
		body.Close()
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, r.corrupt(0, fmt.Sprintf("object %s shorter than the %d bytes recorded", r.p.Object, r.p.StoredSize))
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, r.missing(0, "object "+r.p.Object+" missing")
	case err != nil:
		if cerr := r.ctxErr(); cerr != nil {
			return nil, cerr
		}
		return nil, streamError{fmt.Errorf("chunk: get %v: reading object %s: %w", r.key, r.p.Object, err)}
	}
	r.at += n
	return [][]byte{buf}, nil
}

// sweep lists the objects under the store's prefix for Sweep. An object
// younger than Grace, by the version in its key or by its LastModified, is
// judged young without a request; for the others, the metadata (one HEAD
// request each) names the parent.
func (objects) sweep(ctx context.Context, sw *sweep) error {
	s := sw.s
	err := s.opts.Objects.List(ctx, s.objectPrefix(), func(objs []ObjectInfo) error {
		page, t, err := objects{}.candidates(ctx, s, objs)
		if err != nil {
			return err
		}
		return sw.judge(ctx, objects{}, page, t, &sw.objects)
	})
	if err != nil {
		return fmt.Errorf("chunk: sweep: objects under %s: %w", s.objectPrefix(), err)
	}
	return nil
}

// candidates turns a page of listed objects into what Sweep judges; t
// counts the objects and those this Store did not write.
func (objects) candidates(ctx context.Context, s *Store, objs []ObjectInfo) (page []candidate, t tally, err error) {
	t.listed = len(objs)
	for _, o := range objs {
		version, ok := objectVersion(o.Key)
		if !ok {
			t.foreign++
			continue
		}
		created, _ := versionTime(version)
		if s.clock().Sub(o.LastModified) < s.opts.Grace || s.clock().Sub(created) < s.opts.Grace {
			page = append(page, candidate{id: o.Key, version: version, created: created, young: true})
			continue
		}
		meta, err := s.opts.Objects.Metadata(ctx, o.Key)
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted since it was listed
		}
		if err != nil {
			return nil, t, fmt.Errorf("reading metadata of %s: %w", o.Key, err)
		}
		key, ok := s.keyFromMetadata(meta)
		if !ok {
			t.foreign++
			continue
		}
		rendered, err := key.prefix()
		if err != nil || s.objectKey(key, rendered, version) != o.Key {
			t.foreign++
			continue
		}
		page = append(page, candidate{id: o.Key, key: key, version: version, created: created})
	}
	return page, t, nil
}
