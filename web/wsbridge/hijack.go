package wsbridge

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"
)

const (
	// writeTimeout bounds writing the handshake or an error answer.
	writeTimeout = 10 * time.Second
	// lingerTimeout bounds how long a refused connection is read (and
	// what is read dropped) after its answer, before it is closed.
	lingerTimeout = time.Second
	lingerBytes   = 256 << 10
	// bufSize is the size of the connection's reader and writer, as
	// net/http's.
	bufSize = 4096
	// maxAnswerBody bounds the body of an error answer.
	maxAnswerBody = 4096
)

// unsafeConner is what the bridge needs of the net.Conn fasthttp hands to
// the hijack callback: that wrapper ignores Close (unless the server keeps
// hijacked connections), UnsafeConn returns the connection underneath.
type unsafeConner interface {
	UnsafeConn() net.Conn
}

// aLongTimeAgo is a read deadline that has already passed.
var aLongTimeAgo = time.Unix(1, 0)

// drain returns what fasthttp has already read from raw but not parsed
// (the start of the websocket stream of a client that pipelines), reading
// hc, the hijacked wrapper whose reader holds it. The read deadline in the
// past makes the wrapper's reader stop at its buffer: no byte is taken from
// the network, so what drain returns is bounded by fasthttp's buffer (and,
// over TLS, by what tls.Conn has already decrypted).
func drain(hc, raw net.Conn) ([]byte, error) {
	if err := raw.SetReadDeadline(aLongTimeAgo); err != nil {
		return nil, fmt.Errorf("setting a read deadline: %w", err)
	}
	var buf []byte
	p := make([]byte, bufSize)
	for {
		n, err := hc.Read(p)
		buf = append(buf, p[:n]...)
		if err != nil {
			// A timeout is the expected end. Any other error (the
			// client went away) is met again on raw by the handshake.
			break
		}
	}
	if err := raw.SetReadDeadline(time.Time{}); err != nil {
		return nil, fmt.Errorf("clearing the read deadline: %w", err)
	}
	return buf, nil
}

// responseWriter is the http.ResponseWriter and http.Hijacker that
// websocket.Accept answers through. A 101 goes to the connection at once on
// WriteHeader, before Accept hijacks; any other answer is kept until finish
// writes it, with Connection: close.
type responseWriter struct {
	conn     net.Conn
	buffered []byte
	header   http.Header
	status   int
	body     bytes.Buffer
	// err is the error writing the 101.
	err error
}

func newResponseWriter(conn net.Conn, buffered []byte) *responseWriter {
	return &responseWriter{conn: conn, buffered: buffered, header: make(http.Header)}
}

func (w *responseWriter) Header() http.Header { return w.header }

func (w *responseWriter) WriteHeader(status int) {
	if w.status != 0 {
		return
	}
	w.status = status
	if status != http.StatusSwitchingProtocols {
		return
	}
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 101 Switching Protocols\r\n")
	w.header.Write(&b)
	b.WriteString("\r\n")
	w.err = writeWithin(w.conn, b.Bytes())
}

func (w *responseWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.status == http.StatusSwitchingProtocols {
		return 0, http.ErrHijacked
	}
	if room := maxAnswerBody - w.body.Len(); len(p) > room {
		w.body.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return w.body.Write(p)
}

// Hijack hands the connection over after the 101. Its reader holds the
// bytes drained from fasthttp, then reads the connection.
func (w *responseWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if w.status != http.StatusSwitchingProtocols {
		return nil, nil, errors.New("wsbridge: hijack without a 101")
	}
	if w.err != nil {
		return nil, nil, fmt.Errorf("wsbridge: writing the 101: %w", w.err)
	}
	br := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(w.buffered), w.conn), max(bufSize, len(w.buffered)))
	if len(w.buffered) > 0 {
		// Fill the buffer with exactly the drained bytes: Accept takes
		// what is buffered and reads the connection after it.
		if _, err := br.Peek(len(w.buffered)); err != nil {
			return nil, nil, fmt.Errorf("wsbridge: buffering the drained bytes: %w", err)
		}
	}
	return w.conn, bufio.NewReadWriter(br, bufio.NewWriterSize(w.conn, bufSize)), nil
}

// finish writes a non-101 answer and returns its status.
func (w *responseWriter) finish(r *http.Request) int {
	switch w.status {
	case http.StatusSwitchingProtocols:
		return w.status
	case 0:
		w.status = http.StatusInternalServerError
	}
	writeAnswer(w.conn, r, w.status, w.header, w.body.Bytes())
	return w.status
}

// writeAnswer writes a complete answer that closes the connection.
func writeAnswer(c net.Conn, r *http.Request, status int, h http.Header, body []byte) {
	if h == nil {
		h = make(http.Header)
	}
	if body == nil {
		body = []byte(http.StatusText(status) + "\n")
	}
	h.Del("Transfer-Encoding")
	h.Set("Connection", "close")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "text/plain; charset=utf-8")
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %03d %s\r\n", status, http.StatusText(status))
	h.Write(&b)
	b.WriteString("\r\n")
	if r.Method != http.MethodHead {
		b.Write(body)
	}
	writeWithin(c, b.Bytes())
}

func writeWithin(c net.Conn, p []byte) error {
	if err := c.SetWriteDeadline(time.Now().Add(writeTimeout)); err != nil {
		return err
	}
	_, err := c.Write(p)
	if err2 := c.SetWriteDeadline(time.Time{}); err == nil {
		err = err2
	}
	return err
}

// lingerClose closes the write side of c after an error answer and drops
// what the client still sends for a moment, as net/http does: closing a
// socket with unread data sends a reset, which can destroy the answer
// before the client reads it. fasthttp closes c itself afterwards.
func lingerClose(c net.Conn) {
	cw, ok := c.(interface{ CloseWrite() error })
	if !ok || cw.CloseWrite() != nil {
		c.Close()
		return
	}
	c.SetReadDeadline(time.Now().Add(lingerTimeout))
	io.Copy(io.Discard, io.LimitReader(c, lingerBytes))
	c.Close()
}

// copyRequest returns a net/http request holding copies of what the fasthttp
// request has: nothing in it points into fasthttp's or fiber's buffers.
func copyRequest(fc *fasthttp.RequestCtx) (*http.Request, error) {
	requestURI := string(fc.RequestURI())
	u, err := url.ParseRequestURI(requestURI)
	if err != nil {
		return nil, fmt.Errorf("bad request URI %q: %w", requestURI, err)
	}
	r := &http.Request{
		Method:     string(fc.Method()),
		URL:        u,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     make(http.Header),
		Body:       http.NoBody,
		Host:       string(fc.Host()),
		RemoteAddr: fc.RemoteAddr().String(),
		RequestURI: requestURI,
	}
	if !fc.Request.Header.IsHTTP11() {
		r.Proto, r.ProtoMinor = "HTTP/1.0", 0
	}
	fc.Request.Header.VisitAll(func(k, v []byte) {
		r.Header.Add(string(k), string(v))
	})
	// As in net/http: the Host header is in r.Host only.
	r.Header.Del("Host")
	if st := fc.TLSConnectionState(); st != nil {
		cs := *st
		r.TLS = &cs
	}
	return r, nil
}
