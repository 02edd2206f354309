package chunk

import (
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/ddbsize"
)

// This file computes the cost table of the package documentation ("Cost")
// and the README from the store's own rules: item sizes by
// internal/ddbsize, chunk items as Put writes them, BatchGetItem requests
// as a Reader groups them. TestCostTable fails when either text differs
// from what it computes, so the table cannot go stale.

// costPartSize is the multipart part size the S3 rows assume, and the size
// above which an upload is multipart: s3blob.DefaultPartSize (this module
// cannot import the adapter's, which lives in its own module; an adapter
// set to another s3blob.Options.PartSize sends a different number of
// parts).
const costPartSize = 8 << 20

// costSizes are the payload sizes of the table.
var costSizes = []int64{100 << 10, 1 << 20, 64 << 20}

// costRow is what storing one payload one way costs: the first Put of a
// key, then one Get.
type costRow struct {
	size   int64
	layout string // inline, chunks, S3
	fits   bool   // false: inline, the payload cannot fit the item limit
	write  []opCount
	wcu    int64
	read   []opCount
	rcu    float64 // eventually consistent
}

// opCount is a number of requests of one operation.
type opCount struct {
	op string
	n  int64
}

// costKey is the guide's Reply key, the parent of every row.
var costKey = Key{
	PartitionName: "Id", Partition: &types.AttributeValueMemberS{Value: "DynamoDB#Thread1"},
	SortName: "ReplyDateTime", Sort: &types.AttributeValueMemberS{Value: "2012-03-15T20:42:54.023Z"},
}

// writeUnits and readUnits are DynamoDB's capacity units for one item of
// n bytes: a write unit per 1 KB, an eventually consistent read half a
// unit per 4 KB.
func writeUnits(n int) int64  { return int64((n + 1023) / 1024) }
func readUnits(n int) float64 { return float64((n+4095)/4096) / 2 }

// costRows computes the table for a Store with default Options.
func costRows() ([]costRow, error) {
	st, err := New(&dynamodb.Client{}, "Reply", "ReplyChunks")
	if err != nil {
		return nil, err
	}
	prefix, err := st.keyPrefix(costKey)
	if err != nil {
		return nil, err
	}
	version := newVersion(st.clock())
	parentItem := func(count int64, size int64, extra map[string]types.AttributeValue) (int, error) {
		item := costKey.item()
		item[attrVersion] = &types.AttributeValueMemberS{Value: version}
		item[attrCount] = number(count)
		item[attrSize] = number(size)
		item[attrStored] = number(size)
		item[attrSHA] = &types.AttributeValueMemberB{Value: make([]byte, 32)}
		for k, v := range extra {
			item[k] = v
		}
		return ddbsize.ItemSize(item)
	}
	var rows []costRow
	for _, size := range costSizes {
		// Inline: the payload in the parent, if the item can hold it.
		n, err := parentItem(0, size, map[string]types.AttributeValue{attrInline: &types.AttributeValueMemberB{Value: make([]byte, size)}})
		if err != nil {
			return nil, err
		}
		inline := costRow{size: size, layout: "inline", fits: n <= ddbsize.MaxItemSize}
		if inline.fits {
			inline.write = []opCount{{"GetItem", 1}, {"UpdateItem", 1}}
			inline.wcu = writeUnits(n)
			inline.read = []opCount{{"GetItem", 1}}
			inline.rcu = readUnits(n)
		}

		// Chunks: ChunkSize bytes per chunk item, then a small parent.
		chunks := (size + int64(st.opts.ChunkSize) - 1) / int64(st.opts.ChunkSize)
		parentKey, overhead, err := st.chunkTemplate(costKey, prefix)
		if err != nil {
			return nil, err
		}
		c := costRow{size: size, layout: "chunks", fits: true}
		for seq := 1; seq <= int(chunks); seq++ {
			data := min(int64(st.opts.ChunkSize), size-int64(seq-1)*int64(st.opts.ChunkSize))
			m, err := ddbsize.ItemSize(map[string]types.AttributeValue{
				st.opts.ChunkKeyAttribute: &types.AttributeValueMemberS{Value: chunkKey(prefix, version, seq)},
				attrData:                  &types.AttributeValueMemberB{Value: make([]byte, data)},
				attrParent:                parentKey,
			})
			if err != nil {
				return nil, err
			}
			c.wcu += writeUnits(m)
			c.rcu += readUnits(m)
		}
		p, err := parentItem(chunks, size, map[string]types.AttributeValue{attrChunk: number(int64(st.opts.ChunkSize))})
		if err != nil {
			return nil, err
		}
		c.wcu += writeUnits(p)
		c.rcu += readUnits(p)
		c.write = []opCount{{"GetItem", 1}, {"BatchWriteItem", (chunks + 24) / 25}, {"UpdateItem", 1}}
		r := &Reader{s: st, overhead: overhead, p: parent{Info: Info{Chunks: int(chunks), StoredSize: size}, chunkSize: int64(st.opts.ChunkSize)}}
		c.read = []opCount{{"GetItem", 1}, {"BatchGetItem", r.costRequests()}}

		// S3: the payload in one object, the parent pointing at it.
		p, err = parentItem(-1, size, map[string]types.AttributeValue{
			attrObject: &types.AttributeValueMemberS{Value: st.objectKey(costKey, prefix, version)},
		})
		if err != nil {
			return nil, err
		}
		s3 := costRow{size: size, layout: "S3", fits: true, wcu: writeUnits(p), rcu: readUnits(p)}
		s3.write = []opCount{{"GetItem", 1}, {"S3 PUT", 1}, {"UpdateItem", 1}}
		if size > costPartSize {
			parts := (size + costPartSize - 1) / costPartSize
			s3.write = []opCount{{"GetItem", 1}, {fmt.Sprintf("S3 multipart (create, %d parts, complete)", parts), 1}, {"UpdateItem", 1}}
		}
		gets := (size + objectWindow - 1) / objectWindow
		s3.read = []opCount{{"GetItem", 1}, {"S3 GET", 1}}
		if gets > 1 {
			s3.read = []opCount{{"GetItem", 1}, {"S3 ranged GETs", gets}}
		}
		rows = append(rows, inline, c, s3)
	}
	return rows, nil
}

// costRequests counts the BatchGetItem requests a Reader sends for its
// version's chunks, window by window as fetch groups them.
func (r *Reader) costRequests() int64 {
	var n int64
	for next := 1; next <= r.p.Chunks; {
		perRequest, requests := r.windowSize()
		last := min(r.p.Chunks, next+perRequest*requests-1)
		n += int64((last - next + perRequest) / perRequest)
		next = last + 1
	}
	return n
}

// costTable renders the rows as columns (the package documentation) or as
// a Markdown table (the README).
func costTable(markdown bool) (string, error) {
	rows, err := costRows()
	if err != nil {
		return "", err
	}
	header := []string{"payload", "stored as", "requests to write", "write units", "requests to read", "read units"}
	lines := [][]string{header}
	for _, r := range rows {
		line := []string{sizeName(r.size), r.layout, "does not fit the 400 KB item", "", "", ""}
		if r.fits {
			line = []string{sizeName(r.size), r.layout, ops(r.write), thousands(r.wcu), ops(r.read), units(r.rcu)}
		}
		lines = append(lines, line)
	}
	var b strings.Builder
	if markdown {
		for i, l := range lines {
			fmt.Fprintf(&b, "| %s |\n", strings.Join(l, " | "))
			if i == 0 {
				b.WriteString("|" + strings.Repeat("---|", len(l)) + "\n")
			}
		}
		return b.String(), nil
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, l := range lines {
		fmt.Fprintln(tw, strings.Join(l, "\t"))
	}
	tw.Flush()
	var doc strings.Builder
	for _, l := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
		doc.WriteString("//\t" + strings.TrimRight(l, " ") + "\n")
	}
	return doc.String(), nil
}

func sizeName(n int64) string {
	if n >= 1<<20 {
		return strconv.FormatInt(n>>20, 10) + " MiB"
	}
	return strconv.FormatInt(n>>10, 10) + " KiB"
}

func ops(list []opCount) string {
	var parts []string
	for _, o := range list {
		if o.n == 1 {
			parts = append(parts, o.op)
		} else {
			parts = append(parts, thousands(o.n)+" "+o.op)
		}
	}
	return strings.Join(parts, ", ")
}

func units(x float64) string {
	whole := int64(x)
	s := thousands(whole)
	if x != float64(whole) {
		s += strings.TrimPrefix(strconv.FormatFloat(x-float64(whole), 'f', 1, 64), "0")
	}
	return s
}

// thousands renders n with commas between groups of three digits.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
