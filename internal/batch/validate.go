package batch

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/ddbsize"
)

// job is one write or key on its way through the engine.
type job struct {
	seq   int // position in the input
	table string
	fp    string   // fingerprint: the key when known, else the whole Put item
	names []string // the table's key attributes, nil if unknown
	wire  int64    // bytes it adds to a request body
	write Write
	key   Key

	// Pacing: the partition-key value once known (see partKey), the
	// capacity units it costs, the key state it is charged to while in a
	// request, and whether it was returned unprocessed before.
	pk      string
	pkKnown bool
	units   float64
	pace    *keyPace
	retried bool

	// unsure: sent in a request whose outcome is unknown, and not done
	// since (UnprocessedError.MaybeDone).
	unsure bool
}

// partKey is the fingerprint of the entry's table and partition-key value,
// the unit of pacing; "" without the table's key attributes. It is worked
// out when first needed: a call in which no key is throttled never needs
// it.
func (j *job) partKey() string {
	if !j.pkKnown {
		j.pkKnown = true
		m := j.key.Key
		switch {
		case len(j.write.Put) > 0:
			m = j.write.Put
		case len(j.write.Delete) > 0:
			m = j.write.Delete
		}
		if len(j.names) > 0 {
			j.pk = fingerprint(j.table, m, j.names[:1])
		}
	}
	return j.pk
}

// Bytes a write adds to a BatchWriteItem body beyond its item or key:
// {"PutRequest":{"Item":…}}, or {"DeleteRequest":{"Key":…}}, a comma, and,
// charged to every entry though a request writes it once per table,
// "table":[…],.
const (
	putOverhead    = len(`{"PutRequest":{"Item":}},`)
	deleteOverhead = len(`{"DeleteRequest":{"Key":}},`)
	tableOverhead  = len(`"":[],`)
	// requestOverhead is the rest of a request body:
	// {"RequestItems":{…},"ReturnConsumedCapacity":"INDEXES"} and slack.
	requestOverhead = 64
)

// describe renders the entry's key for error messages.
func (j *job) describe() string {
	switch {
	case j.key.Key != nil:
		return describeKey(j.key.Key, j.names)
	case len(j.write.Delete) > 0:
		return describeKey(j.write.Delete, j.names)
	case j.names != nil && len(j.write.Put) > 0:
		return describeKey(j.write.Put, j.names)
	}
	return ""
}

func (j *job) inputError(err error) *InputError {
	return &InputError{Index: j.seq, Table: j.table, Key: j.describe(), Err: err}
}

func newWriteJob(i int, w Write, keyAttrs map[string][]string) (*job, error) {
	j := &job{seq: i, table: w.Table, write: w}
	fail := func(err error) (*job, error) { return nil, j.inputError(err) }
	if w.Table == "" {
		return fail(fmt.Errorf("%w: no table", ErrInvalidWrite))
	}
	names, known := keyAttrs[w.Table]
	if known && (len(names) < 1 || len(names) > 2) {
		return fail(fmt.Errorf("%w: KeyAttributes[%q] = %q, want 1 or 2 names", ErrInvalidWrite, w.Table, names))
	}
	j.names = names
	switch {
	case len(w.Put) > 0 && len(w.Delete) > 0:
		return fail(fmt.Errorf("%w: both Put and Delete set", ErrInvalidWrite))
	case len(w.Put) > 0:
		if known {
			if err := checkKey(w.Put, names, false); err != nil {
				return fail(err)
			}
			j.fp = fingerprint(w.Table, w.Put, names)
		} else {
			j.fp = fingerprint(w.Table, w.Put, nil)
		}
		size, err := ddbsize.CheckItem(w.Put)
		if err != nil {
			return fail(err)
		}
		j.units = float64(max(1, (size+1023)/1024)) // one WCU per started KB
		j.wire = int64(ddbsize.WireSize(w.Put) + putOverhead)
	case len(w.Delete) > 0:
		if err := checkKey(w.Delete, names, true); err != nil {
			return fail(err)
		}
		j.fp = fingerprint(w.Table, w.Delete, names)
		j.units = 1
		j.wire = int64(ddbsize.WireSize(w.Delete) + deleteOverhead)
	default:
		return fail(fmt.Errorf("%w: neither Put nor Delete set", ErrInvalidWrite))
	}
	j.wire += int64(tableOverhead + len(w.Table))
	return j, nil
}

func newKeyJob(i int, k Key, keyAttrs map[string][]string) (*job, error) {
	j := &job{seq: i, table: k.Table, key: k}
	fail := func(err error) (*job, error) { return nil, j.inputError(err) }
	if k.Table == "" {
		return fail(fmt.Errorf("%w: no table", ErrInvalidWrite))
	}
	names, known := keyAttrs[k.Table]
	if known && (len(names) < 1 || len(names) > 2) {
		return fail(fmt.Errorf("%w: KeyAttributes[%q] = %q, want 1 or 2 names", ErrInvalidWrite, k.Table, names))
	}
	j.names = names
	if err := checkKey(k.Key, names, true); err != nil {
		return fail(err)
	}
	j.fp = fingerprint(k.Table, k.Key, names)
	j.units = 1 // its size is unknown until it is read
	j.wire = int64(ddbsize.WireSize(k.Key) + 1 + tableOverhead + len(k.Table))
	return j, nil
}

// checkKey checks the key attributes of m. With names (the table's key
// schema) it checks those attributes, and when exact also that m holds
// nothing else. Without, m must be a bare key of 1 or 2 valid values; which
// is the sort key is unknown, so the looser partition-key limit applies.
func checkKey(m map[string]types.AttributeValue, names []string, exact bool) error {
	if names == nil {
		if len(m) < 1 || len(m) > 2 {
			return fmt.Errorf("%w: key has %d attributes, want 1 or 2", ErrInvalidWrite, len(m))
		}
		for n, v := range m {
			if err := ddbsize.CheckKeyValue(n, v, false); err != nil {
				return err
			}
		}
		return nil
	}
	for i, n := range names {
		if err := ddbsize.CheckKeyValue(n, m[n], i == 1); err != nil {
			return err
		}
	}
	if exact && len(m) != len(names) {
		return fmt.Errorf("%w: key has %d attributes, table key is %q", ErrInvalidWrite, len(m), names)
	}
	return nil
}
