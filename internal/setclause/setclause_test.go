package setclause

import "testing"

func TestAdd(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"SET #0 = :0\n", "SET #v = :v, #0 = :0\n"},
		{"REMOVE #1\nSET #0 = :0\n", "REMOVE #1\nSET #v = :v, #0 = :0\n"},
		{"set #0 = :0", "set #v = :v, #0 = :0"},
		{"REMOVE #1\n", "SET #v = :v\nREMOVE #1\n"},
		{"ADD #n :one", "SET #v = :v\nADD #n :one"},
		{"", "SET #v = :v"},
		{"REMOVE #SETTING", "SET #v = :v\nREMOVE #SETTING"},
	} {
		if got := Add(tc.in, "#v = :v"); got != tc.want {
			t.Errorf("Add(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
