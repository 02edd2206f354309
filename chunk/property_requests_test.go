package chunk

// propRequests is what the package documentation states a call costs:
// for Put, one consistent GetItem of the parent, BatchWriteItem of at most
// 25 chunks each, one UpdateItem (two in the guide's layout: the counter
// and the flip), an S3 PUT for an object, and deleting the replaced
// version (BatchWriteItem of at most 25 of its chunks, or one S3 DELETE)
// unless RetainOld; for Get, one GetItem, as few BatchGetItem requests as
// requests of "as many chunks as one 16 MB response can return whole" (at
// most 100 keys) allow, and one ranged GET per 8 MiB of an object.
type propRequests struct {
	get, update, batchWrite, batchGet int
	s3Put, s3Get, s3Delete            int
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func (c propCase) putRequests(prev *Info, got Info) propRequests {
	want := propRequests{get: 1, update: 1, batchWrite: ceilDiv(got.Chunks, 25)}
	if c.guide == 2 {
		want.update = 2
	}
	if got.Object != "" {
		want.s3Put = 1
	}
	if prev != nil && !c.retainOld {
		want.batchWrite += ceilDiv(prev.Chunks, 25)
		if prev.Object != "" {
			want.s3Delete = 1
		}
	}
	return want
}

func (c propCase) getRequests(got Info) propRequests {
	want := propRequests{get: 1}
	if got.Chunks > 0 {
		// A chunk item holds at most ChunkSize bytes and its key: 1 KiB
		// covers the keys of these tests. A parent of the guide's layout
		// records no chunk size: it is read for the largest chunk its sizes
		// allow.
		item := c.chunkSize + 1024
		if got.Guide {
			item = maxChunkData + 1024
		}
		want.batchGet = ceilDiv(got.Chunks, min(maxBatchGetKeys, maxBatchGetBytes/item))
	}
	if got.Object != "" {
		want.s3Get = ceilDiv(int(got.StoredSize), objectWindow)
	}
	return want
}

// measured returns the requests p and objs counted.
func measured(p *probe, objs *s3Objects) propRequests {
	return propRequests{
		get: p.count("GetItem"), update: p.count("UpdateItem"), batchWrite: p.count("BatchWriteItem"), batchGet: p.count("BatchGetItem"),
		s3Put: objs.count("PUT"), s3Get: objs.count("GET"), s3Delete: objs.count("DELETE"),
	}
}
