package shard

import (
	"cmp"
	"strings"
)

// updatedNames returns the top-level attribute names an update expression
// built by the expression package changes: the first element of each
// action's target path, resolved through names. The package writes one
// clause per line ("SET #0 = :0, #1.#2 = if_not_exists(#3, :1)"), and a
// target is the path before " = " (SET) or the first token (REMOVE, ADD,
// DELETE) of each top-level, comma-separated action.
func updatedNames(update string, names map[string]string) []string {
	var out []string
	for _, line := range strings.Split(update, "\n") {
		verb, rest, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		for _, action := range splitTopLevel(rest) {
			target := strings.TrimSpace(action)
			if verb == "SET" {
				target, _, _ = strings.Cut(target, "=")
			}
			target, _, _ = strings.Cut(strings.TrimSpace(target), " ")
			first := strings.FieldsFunc(target, func(r rune) bool { return r == '.' || r == '[' })
			if len(first) > 0 {
				out = append(out, cmp.Or(names[first[0]], first[0]))
			}
		}
	}
	return out
}

// splitTopLevel splits s at commas outside parentheses.
func splitTopLevel(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}
