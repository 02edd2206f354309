package chunk

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// TestInlineLimitBelowChunkSize: Put tells a payload is inline from its
// first chunk, so an InlineLimit must be below ChunkSize (ChunkSize − 4
// when the guide's layout writes text). New and a call's optFns refuse a
// larger one with ErrInvalid instead of lowering it; a zero InlineLimit is
// DefaultInlineLimit, lowered to fit a small ChunkSize.
func TestInlineLimitBelowChunkSize(t *testing.T) {
	c := dynamodb.New(dynamodb.Options{})
	text := func(o *Options) { GuideLayout(o); o.Guide.Write = true }
	for _, tc := range []struct {
		name string
		opts []func(*Options)
		want int // the InlineLimit the Store keeps; -2: refused
	}{
		{"the issue's 399,000 at the default ChunkSize", []func(*Options){func(o *Options) { o.InlineLimit = 399_000 }}, -2},
		{"equal to ChunkSize", []func(*Options){func(o *Options) { o.ChunkSize, o.InlineLimit = 1000, 1000 }}, -2},
		{"one below ChunkSize", []func(*Options){func(o *Options) { o.ChunkSize, o.InlineLimit = 1000, 999 }}, 999},
		{"default with a small ChunkSize", []func(*Options){func(o *Options) { o.ChunkSize = 1000 }}, 999},
		{"default with the default ChunkSize", nil, DefaultInlineLimit},
		{"negative", []func(*Options){func(o *Options) { o.ChunkSize, o.InlineLimit = 1000, -1 }}, -1},
		{"text: above ChunkSize − 4", []func(*Options){text, func(o *Options) { o.ChunkSize, o.InlineLimit = 1000, 997 }}, -2},
		{"text: ChunkSize − 4", []func(*Options){text, func(o *Options) { o.ChunkSize, o.InlineLimit = 1000, 996 }}, 996},
		{"text: default", []func(*Options){text, func(o *Options) { o.ChunkSize = 1000 }}, 996},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := New(c, "p", "c", tc.opts...)
			if tc.want == -2 {
				if !errors.Is(err, ErrInvalid) {
					t.Errorf("got %v, want ErrInvalid", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if st.opts.InlineLimit != tc.want {
				t.Errorf("InlineLimit %d, want %d", st.opts.InlineLimit, tc.want)
			}
		})
	}
	// A call's optFns are checked as New's.
	st, err := New(c, "p", "c")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.begin(t.Context(), "Get", []func(*Options){func(o *Options) { o.InlineLimit = 399_000 }}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a call's InlineLimit of 399,000: got %v, want ErrInvalid", err)
	}
}
