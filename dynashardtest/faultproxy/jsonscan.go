package faultproxy

import (
	"encoding/binary"
	"errors"
	"unicode/utf8"
)

// The proxy reads every request body, and the answers to reads, to find
// keys and sizes. With encoding/json alone it read a batch in layers (the
// body, RequestItems, each entry, each item, each value), each a validation
// pass and a decoding pass over the bytes below it, so a 400 KB chunk item
// was scanned about ten times and copied several: in the bench, the
// proxy's parsing cost more CPU than the client's SDK encoding the same
// requests. parseJSON parses a body once into a tree of spans of it,
// validating as it goes; the wire readers (fastwire.go) decode only what
// the proxy needs from those spans, and hand anything outside the plain
// shape the SDKs send back to encoding/json (errSlow), so the results are
// encoding/json's (FuzzFastWire checks it).

// errSlow means the fast readers do not handle an input: it may be
// invalid, or valid in a way they leave to encoding/json (escaped names,
// duplicate members, null where an object is expected, deep nesting).
var errSlow = errors.New("faultproxy: not a plain body")

type jkind uint8

const (
	jObject jkind = iota + 1
	jArray
	jString
	jNumber
	jTrue
	jFalse
	jNull
)

// jnode is one JSON value, a span of the parsed input.
type jnode struct {
	kind       jkind
	start, end int // src[start:end] is the value as written
	// plain: a string without escapes whose bytes are valid UTF-8, so its
	// value is src[start+1:end-1] as it stands.
	plain bool
	// kids: an object's names and values, alternating; an array's elements.
	kids []jnode
}

// maxDepth bounds the parser's recursion; deeper input is left to
// encoding/json, which allows 10,000 levels.
const maxDepth = 200

// parseJSON parses src, which must hold exactly one JSON value (and white
// space). It accepts only valid JSON: anything else, or deeper than
// maxDepth, is errSlow.
func parseJSON(src []byte) (jnode, error) {
	p := jparser{src: src}
	p.space()
	n, ok := p.value(0)
	p.space()
	if !ok || p.i != len(src) {
		return jnode{}, errSlow
	}
	return n, nil
}

type jparser struct {
	src []byte
	i   int
}

func (p *jparser) space() {
	for p.i < len(p.src) {
		switch p.src[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jparser) value(depth int) (jnode, bool) {
	if p.i >= len(p.src) || depth > maxDepth {
		return jnode{}, false
	}
	switch c := p.src[p.i]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		return p.string()
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	case c == 't':
		return p.literal("true", jTrue)
	case c == 'f':
		return p.literal("false", jFalse)
	case c == 'n':
		return p.literal("null", jNull)
	}
	return jnode{}, false
}

func (p *jparser) object(depth int) (jnode, bool) {
	n := jnode{kind: jObject, start: p.i}
	p.i++ // {
	p.space()
	if p.i < len(p.src) && p.src[p.i] == '}' {
		p.i++
		n.end = p.i
		return n, true
	}
	for {
		if p.i >= len(p.src) || p.src[p.i] != '"' {
			return n, false
		}
		name, ok := p.string()
		if !ok {
			return n, false
		}
		p.space()
		if p.i >= len(p.src) || p.src[p.i] != ':' {
			return n, false
		}
		p.i++
		p.space()
		v, ok := p.value(depth + 1)
		if !ok {
			return n, false
		}
		n.kids = append(n.kids, name, v)
		if more, ok := p.next(&n, '}'); !more {
			return n, ok
		}
	}
}

// next reads what follows a member or an element: a comma (more come:
// more is true) or the closing byte (n ends there: ok is true).
func (p *jparser) next(n *jnode, closing byte) (more, ok bool) {
	p.space()
	if p.i >= len(p.src) {
		return false, false
	}
	switch p.src[p.i] {
	case ',':
		p.i++
		p.space()
		return true, true
	case closing:
		p.i++
		n.end = p.i
		return false, true
	}
	return false, false
}

func (p *jparser) array(depth int) (jnode, bool) {
	n := jnode{kind: jArray, start: p.i}
	p.i++ // [
	p.space()
	if p.i < len(p.src) && p.src[p.i] == ']' {
		p.i++
		n.end = p.i
		return n, true
	}
	for {
		v, ok := p.value(depth + 1)
		if !ok {
			return n, false
		}
		n.kids = append(n.kids, v)
		if more, ok := p.next(&n, ']'); !more {
			return n, ok
		}
	}
}

// string scans a string as encoding/json accepts it: no control
// characters, valid escapes, any other bytes (invalid UTF-8 too).
func (p *jparser) string() (jnode, bool) {
	n := jnode{kind: jString, start: p.i}
	src := p.src
	i := p.i + 1
	escaped, ascii := false, true
	for i < len(src) {
		// Eight bytes at a time through runs of plain characters: the
		// bulk of a body is long strings (base64 of binary values).
		for ; i+8 <= len(src); i += 8 {
			x := binary.LittleEndian.Uint64(src[i:])
			if hasLess(x, 0x20) || hasByte(x, '"') || hasByte(x, '\\') {
				break
			}
			if x&swarHigh != 0 {
				ascii = false
			}
		}
		if i >= len(src) {
			break
		}
		c := src[i]
		switch {
		case c == '"':
			p.i = i + 1
			n.end = p.i
			body := src[n.start+1 : i]
			n.plain = !escaped && (ascii || utf8.Valid(body))
			return n, true
		case c < 0x20:
			return n, false
		case c == '\\':
			escaped = true
			i++
			if i >= len(src) {
				return n, false
			}
			switch src[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if i+5 > len(src) {
					return n, false
				}
				for _, h := range src[i+1 : i+5] {
					if !isHex(h) {
						return n, false
					}
				}
				i += 5
			default:
				return n, false
			}
		default:
			if c >= 0x80 {
				ascii = false
			}
			i++
		}
	}
	return n, false
}

const (
	swarLow  = 0x0101010101010101
	swarHigh = 0x8080808080808080
)

// hasLess reports whether a byte of x is less than n (n <= 128).
func hasLess(x, n uint64) bool { return (x-swarLow*n)&^x&swarHigh != 0 }

// hasByte reports whether a byte of x is b.
func hasByte(x uint64, b byte) bool { return hasLess(x^(swarLow*uint64(b)), 1) }

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// number scans -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *jparser) number() (jnode, bool) {
	n := jnode{kind: jNumber, start: p.i}
	src := p.src
	i := p.i
	if src[i] == '-' {
		i++
	}
	digits := func() bool {
		start := i
		for i < len(src) && src[i] >= '0' && src[i] <= '9' {
			i++
		}
		return i > start
	}
	switch {
	case i < len(src) && src[i] == '0':
		i++
	case !digits():
		return n, false
	}
	if i < len(src) && src[i] == '.' {
		i++
		if !digits() {
			return n, false
		}
	}
	if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		i++
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			i++
		}
		if !digits() {
			return n, false
		}
	}
	p.i = i
	n.end = i
	return n, true
}

func (p *jparser) literal(word string, k jkind) (jnode, bool) {
	if len(p.src)-p.i < len(word) || string(p.src[p.i:p.i+len(word)]) != word {
		return jnode{}, false
	}
	n := jnode{kind: k, start: p.i, end: p.i + len(word)}
	p.i += len(word)
	return n, true
}

// raw is the value as written.
func (n jnode) raw(src []byte) []byte { return src[n.start:n.end] }

// text is a plain string's value.
func (n jnode) text(src []byte) (string, bool) {
	if n.kind != jString || !n.plain {
		return "", false
	}
	return string(src[n.start+1 : n.end-1]), true
}
