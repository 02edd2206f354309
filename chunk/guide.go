package chunk

import (
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// This file reads the DynamoDB guide's own chunk layout; guide_write.go
// writes it.

// Guide describes chunked items in the layout of the DynamoDB developer
// guide ("Break up large attributes across multiple items"): the parent
// records ChunkVersion as a number and ChunkCount, each chunk item holds
// its part of the payload in a Message attribute of type S, and a short
// payload stays in the parent's Message, without ChunkCount (and, as the
// guide shows it, without ChunkVersion; Put writes one, see "The guide's
// layout" in the package documentation, and reads take either). No length
// or checksum is recorded. Each field's zero value
// selects that layout, so &Guide{} reads exactly what the guide shows and
// &Guide{Write: true} also writes it, given the guide's chunk key name in
// Options.ChunkKeyAttribute ("Id"; GuideLayout sets both).
type Guide struct {
	// Write makes Put write the guide's layout: a counter ChunkVersion,
	// reserved before any chunk is written (see the package
	// documentation). Default false: Put writes this package's layout,
	// and Guide only lets the Store read the guide's (the migration
	// path).
	Write bool

	// DataAttribute names the chunk items' data attribute and DataType
	// gives its type: S (text, as in the guide) or B. Defaults
	// DefaultGuideAttribute and S. When Put writes S (data or inline), it
	// takes only valid UTF-8 (ErrInvalid otherwise, before any request
	// for Put, and for PutReader as soon as it reads the bad bytes, its
	// chunks then removed) and cuts chunks on rune boundaries, so a
	// chunk may hold up to 3 bytes less than ChunkSize; InlineLimit is
	// then at most ChunkSize-4 (New refuses more).
	DataAttribute string
	DataType      types.ScalarAttributeType

	// InlineAttribute names the parent's attribute holding a short
	// payload and InlineType gives its type: S or B. Defaults
	// DefaultGuideAttribute and S. Put rejects caller attributes of this
	// name (ErrReserved), and Info.Attributes leaves it out.
	InlineAttribute string
	InlineType      types.ScalarAttributeType

	// Checksum makes Put, with Write, also record ChunkBytes and
	// ChunkSHA256 on the parent (readers that know only the guide ignore
	// them), so that reads verify the payload's length and SHA-256.
	// Default false: the parent holds only what the guide shows, and
	// reads verify the chunk count only (Info.NoChecksum).
	Checksum bool
}

// Names of the guide's layout.
const (
	// DefaultGuideAttribute is the guide's data attribute, in chunk items
	// and (for a short payload) in the parent: "Message".
	DefaultGuideAttribute = "Message"
	// GuideChunkKeyAttribute is the key of the guide's chunk table
	// (ReplyChunks): "Id".
	GuideChunkKeyAttribute = "Id"
)

// GuideLayout is an option for New: the tables hold the guide's layout,
// which the Store reads and writes, with the chunk table's key named "Id"
// as in the guide. Compression must stay None.
//
//	st, err := chunk.New(client, "Reply", "ReplyChunks", chunk.GuideLayout)
func GuideLayout(o *Options) {
	o.ChunkKeyAttribute = GuideChunkKeyAttribute
	o.Guide = &Guide{Write: true}
}

// resolveGuide replaces o.Guide by a copy with its defaults and checks it
// against the rest of o.
func (o *Options) resolveGuide(method string) error {
	g := *o.Guide
	o.Guide = &g
	if g.DataAttribute == "" {
		g.DataAttribute = DefaultGuideAttribute
	}
	if g.InlineAttribute == "" {
		g.InlineAttribute = DefaultGuideAttribute
	}
	if g.DataType == "" {
		g.DataType = types.ScalarAttributeTypeS
	}
	if g.InlineType == "" {
		g.InlineType = types.ScalarAttributeTypeS
	}
	name := func(field, v string) error {
		switch {
		case len(v) > 255:
			return invalid(method, "Options.Guide.%s of %d bytes, limit 255", field, len(v))
		case !utf8.ValidString(v):
			return invalid(method, "Options.Guide.%s %q is not valid UTF-8", field, v)
		case isReserved(v):
			return invalid(method, "Options.Guide.%s %q is one of the store's own attributes", field, v)
		}
		return nil
	}
	typ := func(field string, t types.ScalarAttributeType) error {
		if t != types.ScalarAttributeTypeS && t != types.ScalarAttributeTypeB {
			return invalid(method, "Options.Guide.%s %q: want S or B", field, t)
		}
		return nil
	}
	for _, err := range []error{
		name("DataAttribute", g.DataAttribute),
		name("InlineAttribute", g.InlineAttribute),
		typ("DataType", g.DataType),
		typ("InlineType", g.InlineType),
	} {
		if err != nil {
			return err
		}
	}
	text := g.Write && (g.DataType == types.ScalarAttributeTypeS || g.InlineType == types.ScalarAttributeTypeS)
	switch {
	case g.DataAttribute == o.ChunkKeyAttribute || g.DataAttribute == attrParent:
		return invalid(method, "Options.Guide.DataAttribute %q is a chunk item's key or Parent attribute", g.DataAttribute)
	case g.Write && o.Objects != nil:
		return invalid(method, "Options.Objects with Options.Guide.Write: the guide's layout has no object pointer")
	case g.Write && o.Compression != None:
		// The guide's layout records no encoding: its readers would get
		// compressed bytes.
		return invalid(method, "Options.Compression %q with Options.Guide.Write: the guide's layout records no encoding", o.Compression)
	case text && o.ChunkSize < utf8.UTFMax:
		return invalid(method, "Options.ChunkSize %d with Options.Guide's S attributes: a chunk must hold a whole rune (%d bytes)", o.ChunkSize, utf8.UTFMax)
	}
	return nil
}

// maxInlineLimit is the largest InlineLimit o can work with: below
// ChunkSize, as Put tells a payload is inline from its first chunk. Text
// chunks (the guide's layout, written) are cut on rune boundaries, so any
// chunk but the last may be up to 3 bytes short of ChunkSize: only a first
// chunk shorter than that is known to be the whole payload.
func (o *Options) maxInlineLimit() int {
	if g := o.Guide; g != nil && g.Write && (g.DataType == types.ScalarAttributeTypeS || g.InlineType == types.ScalarAttributeTypeS) {
		return o.ChunkSize - utf8.UTFMax
	}
	return o.ChunkSize - 1
}

// guideWrites reports whether Put writes the guide's layout.
func (s *Store) guideWrites() bool { return s.opts.Guide != nil && s.opts.Guide.Write }

// textWrites reports whether Put writes text: the guide's layout with S
// data or S inline payloads.
func (s *Store) textWrites() bool {
	g := s.opts.Guide
	return s.guideWrites() && (g.DataType == types.ScalarAttributeTypeS || g.InlineType == types.ScalarAttributeTypeS)
}

// dataAttribute names the data attribute of the chunk items Put writes.
func (s *Store) dataAttribute() string {
	if s.guideWrites() {
		return s.opts.Guide.DataAttribute
	}
	return attrData
}

// reservedName reports whether a caller attribute may not have this name:
// the store's own, and the guide's inline attribute when Options.Guide is
// set.
func (s *Store) reservedName(name string) bool {
	return isReserved(name) || (s.opts.Guide != nil && name == s.opts.Guide.InlineAttribute)
}

// typed returns b as an attribute value of type t (S or B).
func typed(t types.ScalarAttributeType, b []byte) types.AttributeValue {
	if t == types.ScalarAttributeTypeS {
		return &types.AttributeValueMemberS{Value: string(b)}
	}
	return &types.AttributeValueMemberB{Value: b}
}

// untyped returns the bytes of v if it is of type t (S or B).
func untyped(t types.ScalarAttributeType, v types.AttributeValue) ([]byte, bool) {
	if t == types.ScalarAttributeTypeS {
		if s, ok := asS(v); ok {
			return []byte(s.Value), true
		}
		return nil, false
	}
	b, ok := asB(v)
	if ok && b.Value == nil {
		return []byte{}, true
	}
	return b.Value, ok
}

// parseGuideParent decodes a parent item in the guide's layout. isGuide is
// false when the item is not one (its ChunkVersion is S, or it has
// neither ChunkVersion nor the guide's inline attribute), and parseParent
// goes on with its own layout.
func (s *Store) parseGuideParent(key Key, item map[string]types.AttributeValue) (p parent, ok bool, err error, isGuide bool) {
	g := s.opts.Guide
	bad := func(why string) (parent, bool, error, bool) {
		return parent{}, false, &CorruptError{Key: key, Version: p.Version, Reason: "parent item: " + why}, true
	}
	if v, isN := asN(item[attrVersion]); isN {
		p.Version = v.Value
		if g == nil {
			return bad(attrVersion + " is a number, as in the guide's layout: set Options.Guide to read it")
		}
		if p.Version, err = canonicalNumber(v.Value); err != nil {
			return bad(fmt.Sprintf("%s = %q", attrVersion, v.Value))
		}
	} else if _, isS := asS(item[attrVersion]); isS || g == nil || item[g.InlineAttribute] == nil {
		return parent{}, false, nil, false
	}
	p.guide, p.Guide = true, true
	num := func(name string) (int64, bool, error) {
		av, present := item[name]
		if !present {
			return 0, false, nil
		}
		n, isN := asN(av)
		if !isN {
			return 0, false, fmt.Errorf("%s is not a number", name)
		}
		x, err := strconv.ParseInt(n.Value, 10, 64)
		if err != nil || x < 0 {
			return 0, false, fmt.Errorf("%s = %q", name, n.Value)
		}
		return x, true, nil
	}
	count, _, err1 := num(attrCount)
	size, hasSize, err2 := num(attrSize)
	stored, hasStored, err3 := num(attrStored)
	for _, err := range []error{err1, err2, err3} {
		if err != nil {
			return bad(err.Error())
		}
	}
	p.Chunks = int(count)
	if e, ok := asS(item[attrEncoding]); ok {
		p.Compression = Compression(e.Value)
		if p.Compression != Gzip && p.Compression != Zstd {
			return bad("unknown encoding " + strconv.Quote(e.Value))
		}
	}
	if av, present := item[attrSHA]; present {
		sum, ok := asB(av)
		if !ok || len(sum.Value) != len(p.SHA256) {
			return bad(attrSHA + " malformed")
		}
		copy(p.SHA256[:], sum.Value)
	} else {
		p.NoChecksum = true
	}
	switch pv := item[attrPrev].(type) {
	case *types.AttributeValueMemberS:
		p.prev = pv.Value
	case *types.AttributeValueMemberN:
		p.prev, _ = canonicalNumber(pv.Value)
	}
	if av, present := item[g.InlineAttribute]; present {
		data, ok := untyped(g.InlineType, av)
		switch {
		case !ok:
			return bad(fmt.Sprintf("%s is not of type %s", g.InlineAttribute, g.InlineType))
		case p.Chunks == 0 || len(data) > 0:
			// An empty inline attribute beside chunks is the guide's blank
			// Message of a chunked reply, not a second payload.
			p.inline = data
		}
	} else if p.Chunks == 0 {
		p.inline = []byte{} // a version with neither chunks nor text holds the empty payload
	}
	p.Size, p.StoredSize = -1, -1
	if p.Chunks == 0 {
		p.Size, p.StoredSize = int64(len(p.inline)), int64(len(p.inline))
	}
	if hasStored {
		p.StoredSize = stored
	}
	if hasSize {
		p.Size = size
		if !hasStored && p.Compression == None {
			p.StoredSize = size
		}
	}
	if why := p.contradiction(); why != "" {
		return bad(why)
	}
	p.Attributes = map[string]types.AttributeValue{}
	for name, av := range item {
		if name == key.PartitionName || name == key.SortName || s.reservedName(name) {
			continue
		}
		p.Attributes[name] = av
	}
	return p, true, nil, true
}
