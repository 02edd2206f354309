package faultproxy

import (
	"fmt"
	"hash/crc32"
	"net"
	"net/http"
	"strconv"
)

// Response bodies exactly as DynamoDB sends them.
var (
	throttleBody = []byte(`{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",` +
		`"message":"The level of configured provisioned throughput for the table was exceeded. ` +
		`Consider increasing your provisioning level with the UpdateTable API."}`)
	internalErrorBody = []byte(`{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError",` +
		`"message":"Internal server error"}`)
)

const jsonContentType = "application/x-amz-json-1.0"

// respond sends the target's response with body rb, or the fault after
// instead of it. The target's checksum is replaced because rb may have been
// rewritten.
func (p *Proxy) respond(w http.ResponseWriter, resp *http.Response, rb []byte, after fault) {
	h := w.Header()
	for k, vs := range resp.Header {
		if !hopByHop(k) && k != "Content-Length" && k != "X-Amz-Crc32" {
			h[k] = vs
		}
	}
	setChecksum(h, rb)
	switch after {
	case resetConn:
		reset(w)
	case internalError:
		p.reply(w, http.StatusInternalServerError, internalErrorBody)
	case truncate:
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(rb[:len(rb)/2])
		reset(w)
	default:
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(rb)
	}
}

// reset closes the client connection with a TCP RST (SO_LINGER 0), after
// flushing whatever part of a response was written: the client then reads
// "connection reset by peer", which the SDK's retryer treats as retryable.
// (A plain close would surface as an unexpected EOF, which it does not
// retry.)
func reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler) // makes net/http drop the connection
	}
	conn, _, err := hj.Hijack() // flushes a partial response first
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// reply writes a body the proxy made up, with DynamoDB's headers.
func (p *Proxy) reply(w http.ResponseWriter, status int, body []byte) {
	p.mu.Lock()
	p.nextID++
	id := p.nextID
	p.mu.Unlock()
	h := w.Header()
	h.Del("Content-Encoding")
	h.Set("Content-Type", jsonContentType)
	h.Set("X-Amzn-Requestid", fmt.Sprintf("FAULTPROXY%042d", id))
	setChecksum(h, body)
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// setChecksum sets the length and the CRC32 that the SDK verifies.
func setChecksum(h http.Header, body []byte) {
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
}
