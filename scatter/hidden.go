package scatter

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// hiddenPrefix starts the names of the attributes package shard keeps on
// an item for itself, such as dynashard:w, the token of the item's last
// transactional write (see shard's package doc). They are not the
// caller's data: a Rebalance move drops dynashard:w, and a Scatter drops
// every one of them from the items it returns, so that an item reads the
// same wherever it is stored.
const hiddenPrefix = "dynashard:"

func isHidden(name string) bool { return strings.HasPrefix(name, hiddenPrefix) }

// unhide replaces each item with hidden attributes by a copy without
// them; the maps the client returned are left as they are.
func unhide(items []map[string]types.AttributeValue) {
	for i, it := range items {
		if hasHidden(it) {
			items[i] = withoutHidden(it)
		}
	}
}

func hasHidden(item map[string]types.AttributeValue) bool {
	for name := range item {
		if isHidden(name) {
			return true
		}
	}
	return false
}

func withoutHidden(item map[string]types.AttributeValue) map[string]types.AttributeValue {
	out := make(map[string]types.AttributeValue, len(item))
	for name, v := range item {
		if !isHidden(name) {
			out[name] = v
		}
	}
	return out
}
