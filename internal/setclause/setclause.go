// Package setclause adds an assignment to the SET clause of a DynamoDB
// update expression, for the writes that set a hidden attribute beside
// the caller's update (shard's item token, split's part version).
package setclause

import "regexp"

// keyword matches the keyword that begins an update's SET clause. SET is
// a reserved word, so outside the clause's keyword it can only appear
// inside a placeholder, which it does not begin.
var keyword = regexp.MustCompile(`(?i)(^|\s)SET\s+`)

// Add returns update with assignment (such as "#v = :v") added to its SET
// clause, or with a SET clause of its own if it has none.
func Add(update, assignment string) string {
	if m := keyword.FindStringIndex(update); m != nil {
		return update[:m[1]] + assignment + ", " + update[m[1]:]
	}
	if update == "" {
		return "SET " + assignment
	}
	return "SET " + assignment + "\n" + update
}
