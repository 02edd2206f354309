package chunk

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/ddbsize"
	"github.com/dynashard/dynashard/internal/errs"
)

// Key is the primary key of a parent item: its partition key and, for a
// table with a composite primary key, its sort key. Values must be S, N or
// B. The zero value is not a valid key; methods taking one reject it with
// ErrInvalidKey.
//
// The store needs the names as well as the values, and in order: chunk keys
// join the partition-key value and then the sort-key value with '#', as the
// DynamoDB guide does ("DynamoDB#Thread1"), and a map would lose that order.
type Key struct {
	// PartitionName and Partition are the partition-key attribute's name
	// and value.
	PartitionName string
	Partition     types.AttributeValue
	// SortName and Sort are the sort key's name and value; both are zero
	// for a table with a simple primary key.
	SortName string
	Sort     types.AttributeValue

	// Name, if not empty, begins the item's chunk keys (and names its
	// objects) in place of its rendered key values: an item that moves
	// between keys keeps its chunks if every key it may have gives the
	// same Name. Package repo names a large value after its logical key,
	// so that shard.Table.Rebalance can move the item. Sweep cannot tell the
	// parent of a named chunk from its key, so it leaves named chunks and
	// objects alone (SweepStats.Foreign, ObjectsForeign): those a crashed
	// Put left behind stay. A Name changes the guide's layout too, where a
	// reader that knows only the guide derives chunk keys from the key
	// values.
	Name string
}

// String renders k for messages: its values joined with '#', quoted, as
// they begin every chunk key of k.
func (k Key) String() string {
	p, err := k.prefix()
	if err != nil {
		return fmt.Sprintf("{%s %v, %s %v}", k.PartitionName, k.Partition, k.SortName, k.Sort)
	}
	return strconv.Quote(p)
}

// item returns k as the Key map of a GetItem or UpdateItem request.
func (k Key) item() map[string]types.AttributeValue {
	m := map[string]types.AttributeValue{k.PartitionName: k.Partition}
	if k.SortName != "" {
		m[k.SortName] = k.Sort
	}
	return m
}

// validate checks k as DynamoDB would check a parent key, and its Name.
func (k Key) validate() error {
	if !utf8.ValidString(k.Name) {
		return fmt.Errorf("%w: Name %q is not valid UTF-8", ErrInvalidKey, k.Name)
	}
	if k.PartitionName == "" {
		return fmt.Errorf("%w: empty partition-key name", ErrInvalidKey)
	}
	if err := checkKeyValue(k.PartitionName, k.Partition, false); err != nil {
		return err
	}
	switch {
	case k.SortName == "" && k.Sort != nil:
		return fmt.Errorf("%w: sort-key value without a name", ErrInvalidKey)
	case k.SortName != "":
		if k.SortName == k.PartitionName {
			return fmt.Errorf("%w: sort key and partition key both named %q", ErrInvalidKey, k.SortName)
		}
		return checkKeyValue(k.SortName, k.Sort, true)
	}
	return nil
}

// checkKeyValue checks one key value as DynamoDB would, a typed nil such as
// (*types.AttributeValueMemberS)(nil) included.
func checkKeyValue(name string, v types.AttributeValue, isSortKey bool) error {
	if v != nil && errs.IsNil(v) {
		return fmt.Errorf("%w: key attribute %q: nil %T", ErrInvalidKey, name, v)
	}
	if err := ddbsize.CheckKeyValue(name, v, isSortKey); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidKey, err)
	}
	return nil
}

// prefix returns the parent key rendered as the guide renders it: the key
// values joined with '#'. Equal keys give equal prefixes, so an N key is
// canonicalised (1, 1.0 and 1E0 are one item to DynamoDB and must be one
// chunk prefix here too).
func (k Key) prefix() (string, error) {
	if err := k.validate(); err != nil {
		return "", err
	}
	if k.Name != "" {
		return k.Name, nil
	}
	p, err := renderKeyValue(k.Partition)
	if err != nil {
		return "", err
	}
	if k.SortName != "" {
		s, err := renderKeyValue(k.Sort)
		if err != nil {
			return "", err
		}
		p += "#" + s
	}
	return p, nil
}

// renderKeyValue renders one key value for a chunk key: S as is, N in plain
// canonical decimal, B in standard base64 (the form DynamoDB's JSON uses).
func renderKeyValue(v types.AttributeValue) (string, error) {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return v.Value, nil
	case *types.AttributeValueMemberN:
		return canonicalNumber(v.Value)
	case *types.AttributeValueMemberB:
		return base64.StdEncoding.EncodeToString(v.Value), nil
	}
	return "", fmt.Errorf("%w: key value of type %T", ErrInvalidKey, v)
}

// canonicalNumber renders a DynamoDB number in plain decimal with no
// exponent, no leading or trailing zeros and no "+": "100", "-0.015", "0".
// Numbers DynamoDB considers equal render equally.
func canonicalNumber(s string) (string, error) {
	n, err := ddbsize.ParseNumber(s)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidKey, err)
	}
	if n.Digits == "" {
		return "0", nil
	}
	var b strings.Builder
	if n.Neg {
		b.WriteByte('-')
	}
	d := n.Digits
	switch {
	case n.Exp < 0:
		b.WriteString("0.")
		b.WriteString(strings.Repeat("0", -n.Exp-1))
		b.WriteString(d)
	case n.Exp >= len(d)-1:
		b.WriteString(d)
		b.WriteString(strings.Repeat("0", n.Exp-(len(d)-1)))
	default:
		b.WriteString(d[:n.Exp+1])
		b.WriteByte('.')
		b.WriteString(d[n.Exp+1:])
	}
	return b.String(), nil
}

// versionLen is the length of a version id: 16 bytes in unpadded base32hex.
const versionLen = 26

var versionEncoding = base32.HexEncoding.WithPadding(base32.NoPadding)

// newVersion returns a version id unique to one write attempt: the creation
// time in nanoseconds (big-endian, so ids sort by time) and 64 random bits.
// The time lets the sweeper tell young versions from old ones without
// reading anything else.
func newVersion(t time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(t.UnixNano()))
	rand.Read(b[8:]) // never fails (crypto/rand, Go 1.24+)
	return versionEncoding.EncodeToString(b[:])
}

// versionTime returns the creation time recorded in a version id.
func versionTime(v string) (time.Time, error) {
	if len(v) != versionLen {
		return time.Time{}, fmt.Errorf("chunk: version %q: length %d, want %d", v, len(v), versionLen)
	}
	b, err := versionEncoding.DecodeString(v)
	if err != nil {
		return time.Time{}, fmt.Errorf("chunk: version %q: %w", v, err)
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(b[:8]))), nil
}

// chunkKey is the chunk table key of chunk seq (1-based) of a version.
func chunkKey(prefix, version string, seq int) string {
	return prefix + "#" + version + "#" + strconv.Itoa(seq)
}

// errBadChunkKey reports a chunk-table key this package did not write.
var errBadChunkKey = errors.New("chunk: not a chunk key")

// parseChunkKey splits a chunk key into prefix, version and sequence
// number. The prefix may itself contain '#', so the key is split from the
// right, where version and number never contain one.
func parseChunkKey(k string) (prefix, version string, seq int, err error) {
	i := strings.LastIndexByte(k, '#')
	if i < 0 {
		return "", "", 0, fmt.Errorf("%w: %q", errBadChunkKey, k)
	}
	seq, err = strconv.Atoi(k[i+1:])
	if err != nil || seq < 1 || k[i+1] == '0' || k[i+1] == '+' {
		return "", "", 0, fmt.Errorf("%w: %q: bad sequence number", errBadChunkKey, k)
	}
	j := strings.LastIndexByte(k[:i], '#')
	if j < 0 || i-j-1 != versionLen {
		return "", "", 0, fmt.Errorf("%w: %q: no version", errBadChunkKey, k)
	}
	version = k[j+1 : i]
	if _, err := versionTime(version); err != nil {
		return "", "", 0, fmt.Errorf("%w: %q: %w", errBadChunkKey, k, err)
	}
	return k[:j], version, seq, nil
}
