package chunk

import (
	"context"
	"io"
)

// medium is where the stored bytes of one version live: inline in the
// parent item, chunk items in the chunk table, or one object in
// Options.Objects. Everything else (the parent protocol of Put, the
// Reader's checks, Delete, the judgement of Sweep) is written once over
// it; a medium only moves bytes.
type medium interface {
	// store writes w's payload, read from src, first being its first
	// stored chunk when Put has read it already (nil otherwise). On an
	// error, Put abandons what it wrote.
	store(ctx context.Context, w *write, src chunkSource, first []byte) error
	// fetch returns the next stored bytes of r's version, in order, and
	// moves r.at past them; io.EOF after the last.
	fetch(r *Reader) ([][]byte, error)
	// more reports whether r's version has stored bytes fetch has not
	// returned yet.
	more(r *Reader) bool
	// remove deletes the stored bytes with the given ids (chunk keys,
	// object keys), for drop and for Sweep.
	remove(ctx context.Context, s *Store, ids []string) error
	// ids returns the ids of the stored bytes of version pl of the key
	// whose chunk keys begin with prefix.
	ids(prefix string, pl placement) []string
}

// placement says where the stored bytes of one version are.
type placement struct {
	version string
	chunks  int    // chunk items; 0 when inline or in an object
	object  string // the object's key when offloaded
}

// medium returns the medium holding pl's bytes.
func (pl placement) medium() medium {
	switch {
	case pl.object != "":
		return objects{}
	case pl.chunks > 0:
		return chunkItems{}
	}
	return inline{}
}

// drop deletes the stored bytes of version pl of the key whose chunk keys
// begin with prefix, once no parent holds it, unless ctx is done. It is
// best effort: what it leaves is an orphan that Sweep removes.
func (s *Store) drop(ctx context.Context, prefix string, pl placement) {
	if ctx.Err() != nil {
		return
	}
	m := pl.medium()
	if ids := m.ids(prefix, pl); len(ids) > 0 {
		m.remove(ctx, s, ids)
	}
}

// inline is the medium of a payload kept in the parent item
// (ChunkData, or the guide's inline attribute): Put's flip writes it, and
// there is nothing else to store, fetch from elsewhere or delete.
type inline struct{}

func (inline) store(context.Context, *write, chunkSource, []byte) error { return nil }

func (m inline) fetch(r *Reader) ([][]byte, error) {
	if !m.more(r) {
		return nil, io.EOF
	}
	r.at = 1
	return [][]byte{r.p.inline}, nil
}

func (inline) more(r *Reader) bool { return r.at == 0 && len(r.p.inline) > 0 }

func (inline) remove(context.Context, *Store, []string) error { return nil }

func (inline) ids(string, placement) []string { return nil }
