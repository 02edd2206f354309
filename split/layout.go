package split

import (
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/shard"
)

// MaxParts is the most parts a Layout may have: TransactWriteItems takes
// at most 100 actions, and Create and Delete write every part in one.
const MaxParts = 100

// MaxTransactionBytes bounds the items of one Create, Put or Delete,
// as internal/ddbsize counts them: DynamoDB refuses a transaction of more
// than 4 MB; the decimal reading is used so that neither reading is
// exceeded.
const MaxTransactionBytes = 4_000_000

// Layout describes a logical item split into parts, each in a table of
// its own, all sharing the item's logical key: the guide's ProductCatalog,
// ProductAvailability and ExtendedProductCatalog, keyed by Id. A Layout is
// data, safe to copy and share; New copies it.
type Layout struct {
	// PartitionKey names the logical partition-key attribute: the
	// attribute of T holding it, and the partition key of every unsharded
	// part's table. Required.
	PartitionKey string
	// PartitionKeyType is its type: S (when empty) or N.
	PartitionKeyType types.ScalarAttributeType
	// SortKey names the logical sort-key attribute; empty means the parts
	// have a simple primary key. A sharded part needs one, of type S.
	SortKey string
	// SortKeyType is its type: S (when empty) or N.
	SortKeyType types.ScalarAttributeType
	// Parts are the parts, 1..MaxParts, each in a table of its own.
	Parts []Part
}

// Part is one part of a logical item: a table and the attributes of T it
// holds.
type Part struct {
	// Name names the part in calls ("basic", "availability"). Required,
	// unique in the Layout.
	Name string
	// Table is the part's table, unique in the Layout. Required unless
	// Shard is set; then it is Shard.Table (or must equal it).
	Table string
	// Attributes are the top-level attributes of T this part holds. Every
	// attribute T marshals to, other than the key and the versions, must
	// belong to exactly one part. Required: at least one.
	Attributes []string
	// Version, if set, names a numeric attribute of T for this part's
	// optimistic locking: Create writes 1, Put writes only if the stored
	// version equals the value's and stores it plus one, Update adds one.
	// It must not be a key attribute or another part's attribute or
	// version. Default "": the part's writes are last-writer-wins (they
	// still require the part to exist).
	Version string
	// Shard, if set, spreads the part's table over physical partition keys
	// as package shard does: the logical partition-key value is the base,
	// the logical sort-key value the id, and the part's item has key
	// Shard.PartitionKey = base<sep>suffix (Shard.Codec, suffix from
	// Shard.Strategy's Pick of the id at Shard.Strategy's N),
	// Shard.SortKey = id. The strategy must be calculated (Get computes the
	// key) and the layout Unchecked: split does not read or write shard's
	// layout record, so a base resharded through shard is not followed
	// (see the package doc). Default nil: the part's table is keyed like
	// the Layout.
	Shard *shard.Layout
	// Large, if set, names one of the part's Attributes whose value is
	// stored through a chunk store, so that it may exceed DynamoDB's
	// 400 KB item limit: the part's item is the store's parent item (see
	// LargeField and "Large parts" in the package doc). Default nil: the
	// part's item, with every attribute, must fit the item limit.
	Large *LargeField
}

// table returns the part's table name.
func (p Part) table() string {
	if p.Table == "" && p.Shard != nil {
		return p.Shard.Table
	}
	return p.Table
}

// keyNames returns the key attribute names of the part's table, partition
// key first.
func (p Part) keyNames(l Layout) []string {
	if p.Shard != nil {
		return []string{p.Shard.PartitionKey, p.Shard.SortKey}
	}
	if l.SortKey == "" {
		return []string{l.PartitionKey}
	}
	return []string{l.PartitionKey, l.SortKey}
}

func (l Layout) clone() Layout {
	l.Parts = slices.Clone(l.Parts)
	for i := range l.Parts {
		p := &l.Parts[i]
		p.Attributes = slices.Clone(p.Attributes)
		if p.Shard != nil {
			sl := *p.Shard
			sl.TableKey = slices.Clone(sl.TableKey)
			p.Shard = &sl
		}
		if p.Large != nil {
			lf := *p.Large
			p.Large = &lf
		}
	}
	return l
}

func keyType(t types.ScalarAttributeType) types.ScalarAttributeType {
	if t == "" {
		return types.ScalarAttributeTypeS
	}
	return t
}

// Validate reports whether l can describe a split item: a partition key
// of type S or N, a sort key distinct from it, 1..MaxParts parts with
// distinct non-empty names and tables, each holding at least one
// attribute, no attribute or version held twice or named like a key
// attribute, every Shard layout valid, Unchecked, calculated, with a
// sort key of type S and no Index, in a Layout whose keys are both S, and
// every Large naming one of its part's attributes, with a chunk store
// whose parent table is the part's table and whose chunk table is no
// part's table and no other large part's chunk table. The error matches
// ErrInvalidLayout (and ErrInvalid) and names the part and the field.
func (l Layout) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidLayout, fmt.Sprintf(format, args...))
	}
	switch {
	case l.PartitionKey == "":
		return bad("empty PartitionKey")
	case keyType(l.PartitionKeyType) != types.ScalarAttributeTypeS && keyType(l.PartitionKeyType) != types.ScalarAttributeTypeN:
		return bad("PartitionKeyType %q, want S or N", l.PartitionKeyType)
	case l.SortKey == "" && l.SortKeyType != "":
		return bad("SortKeyType %q without a SortKey", l.SortKeyType)
	case l.SortKey != "" && l.SortKey == l.PartitionKey:
		return bad("SortKey %q is the PartitionKey", l.SortKey)
	case keyType(l.SortKeyType) != types.ScalarAttributeTypeS && keyType(l.SortKeyType) != types.ScalarAttributeTypeN:
		return bad("SortKeyType %q, want S or N", l.SortKeyType)
	case len(l.Parts) == 0:
		return bad("no parts")
	case len(l.Parts) > MaxParts:
		return bad("%d parts, at most %d (one transaction writes them all)", len(l.Parts), MaxParts)
	}
	names, tables, held := map[string]bool{}, map[string]string{}, map[string]string{}
	chunkTables := map[string]string{} // chunk table → the large part using it
	for i, p := range l.Parts {
		if err := l.checkPart(p); err != nil {
			return bad("part %d (%q): %v", i, p.Name, err)
		}
		if names[p.Name] {
			return bad("part name %q used twice", p.Name)
		}
		names[p.Name] = true
		if other, ok := tables[p.table()]; ok {
			return bad("parts %q and %q share table %q: each part needs a table of its own", other, p.Name, p.table())
		}
		tables[p.table()] = p.Name
		if p.Large != nil {
			ct := p.Large.chunkTable()
			if other, ok := chunkTables[ct]; ok {
				return bad("large parts %q and %q share chunk table %q: Sweep of one store would delete the other's chunks", other, p.Name, ct)
			}
			chunkTables[ct] = p.Name
		}
		attrs := p.Attributes
		if p.Version != "" {
			attrs = append(slices.Clone(attrs), p.Version)
		}
		for _, a := range attrs {
			if other, ok := held[a]; ok {
				return bad("attribute %q held by parts %q and %q", a, other, p.Name)
			}
			held[a] = p.Name
		}
	}
	for a, pn := range held {
		if a == l.PartitionKey || a == l.SortKey {
			return bad("part %q holds key attribute %q", pn, a)
		}
	}
	for ct, pn := range chunkTables {
		if other, ok := tables[ct]; ok {
			return bad("part %q's chunk table %q is the table of part %q", pn, ct, other)
		}
	}
	return nil
}

// checkPart checks one part on its own.
func (l Layout) checkPart(p Part) error {
	switch {
	case p.Name == "":
		return fmt.Errorf("empty Name")
	case p.table() == "":
		return fmt.Errorf("empty Table")
	case len(p.Attributes) == 0:
		return fmt.Errorf("no Attributes")
	}
	keys := p.keyNames(l)
	for _, a := range p.Attributes {
		if a == "" {
			return fmt.Errorf("empty attribute name")
		}
		if slices.Contains(keys, a) {
			return fmt.Errorf("attribute %q is a key attribute of its table", a)
		}
	}
	if slices.Contains(p.Attributes, p.Version) || slices.Contains(keys, p.Version) {
		return fmt.Errorf("version %q is a key attribute or one of the part's attributes", p.Version)
	}
	if p.Shard != nil {
		if err := l.checkShard(p); err != nil {
			return err
		}
	}
	if p.Large != nil {
		return p.Large.check(p)
	}
	return nil
}

func (l Layout) checkShard(p Part) error {
	sl := p.Shard
	if err := sl.Validate(); err != nil {
		return err
	}
	switch {
	case p.Table != "" && p.Table != sl.Table:
		return fmt.Errorf("the part's Table %q differs from Shard.Table %q", p.Table, sl.Table)
	case sl.Index != "":
		return fmt.Errorf("the part's Shard has Index %q: a part is written to its table", sl.Index)
	case sl.SortKey == "" || (sl.SortKeyType != "" && sl.SortKeyType != types.ScalarAttributeTypeS):
		return fmt.Errorf("the part's Shard needs a sort key of type S (the id)")
	case !shard.Calculated(sl.Strategy):
		return fmt.Errorf("the part's Shard strategy %v does not derive the suffix from the id: Get could not find the part", sl.Strategy)
	case !sl.Unchecked:
		return fmt.Errorf("the part's Shard must be Unchecked (set Shard.Unchecked): split computes the part's keys at the strategy's N and neither reads nor writes shard's layout record, so a base resharded through shard would not be followed")
	case l.SortKey == "" || keyType(l.PartitionKeyType) != types.ScalarAttributeTypeS || keyType(l.SortKeyType) != types.ScalarAttributeTypeS:
		return fmt.Errorf("a sharded part needs a Layout with a partition key (the base) and a sort key (the id), both of type S")
	}
	return nil
}

// CreateTableInputs returns the CreateTable request of every part's table,
// in the order of Parts, billed on demand, then that of the chunk table of
// every part with a Large, in the same order (its store's
// ChunkTableInput); set ProvisionedThroughput and BillingMode on a result
// for a provisioned table (the guide's point: each part's table gets the
// capacity its own access pattern needs). A sharded part's is its Shard
// layout's CreateTableInput.
func (l Layout) CreateTableInputs() ([]*dynamodb.CreateTableInput, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	ins := make([]*dynamodb.CreateTableInput, 0, len(l.Parts))
	for _, p := range l.Parts {
		if p.Shard != nil {
			in, err := p.Shard.CreateTableInput()
			if err != nil {
				return nil, err
			}
			ins = append(ins, in)
			continue
		}
		in := &dynamodb.CreateTableInput{
			TableName:   aws.String(p.Table),
			BillingMode: types.BillingModePayPerRequest,
			KeySchema:   []types.KeySchemaElement{{AttributeName: aws.String(l.PartitionKey), KeyType: types.KeyTypeHash}},
			AttributeDefinitions: []types.AttributeDefinition{
				{AttributeName: aws.String(l.PartitionKey), AttributeType: keyType(l.PartitionKeyType)},
			},
		}
		if l.SortKey != "" {
			in.KeySchema = append(in.KeySchema, types.KeySchemaElement{AttributeName: aws.String(l.SortKey), KeyType: types.KeyTypeRange})
			in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String(l.SortKey), AttributeType: keyType(l.SortKeyType)})
		}
		ins = append(ins, in)
	}
	for _, p := range l.Parts {
		if p.Large != nil {
			in, err := p.Large.Store.ChunkTableInput()
			if err != nil {
				return nil, fmt.Errorf("%w: part %q: %w", ErrInvalidLayout, p.Name, err)
			}
			ins = append(ins, in)
		}
	}
	return ins, nil
}
