// Package wsbridge serves github.com/coder/websocket connections from fiber
// v2 routes, on the same port as the rest of the app, through fasthttp's
// connection hijack. It owns everything between a fiber request and a
// *websocket.Conn: the copy of the request, the handshake on the raw
// connection, the life of the handler, and the shutdown of every connection
// it opened.
//
// # Why a bridge
//
// fiber's net/http adaptor cannot carry a websocket: with the fasthttp that
// fiber v2.52 pins its ResponseWriter is no http.Hijacker, and later
// fasthttp versions hijack without sending the 101 that coder/websocket
// wrote (it counts on net/http to flush it). So the bridge hijacks the
// connection itself and gives websocket.Accept a ResponseWriter of its own.
// Doing so safely needs care at each of these points (notes/
// websocket-bridge.md in the design documents has the measurements):
//
//  1. The handshake is written by the bridge's ResponseWriter straight to
//     the connection; Accept then hijacks that writer.
//  2. The fiber handler calls HijackSetNoResponse before Hijack, or fasthttp
//     would first write a 200 of its own.
//  3. fiber recycles its Ctx before the hijack callback runs, so the
//     *http.Request handed to the handler is a deep copy made in the fiber
//     handler, never read from the Ctx later.
//  4. The net.Conn that fasthttp hands to the callback ignores Close, so
//     neither CloseNow nor a cancelled context could end a pending Read. The
//     bridge uses the real connection, taken from the wrapper's UnsafeConn
//     method; an upgrade without it is refused (500), never served
//     half-working.
//  5. fasthttp may hold bytes of the first websocket frame in its read
//     buffer (a client that pipelines), and it returns that buffer to a
//     shared pool when the callback ends. The bridge drains those bytes into
//     a reader of its own before the handshake, with a read deadline in the
//     past so that nothing is read from the network meanwhile.
//  6. Every answer other than 101 (Accept's 426 for a plain GET, 403, 400,
//     503 while shutting down) carries Connection: close: the connection is
//     closed after it.
//  7. fiber's shutdown does not know hijacked connections: they outlive it.
//     The Bridge tracks them; Shutdown closes each with 1001 (going away)
//     and then cancels its handler's context, waits for the handlers,
//     force-closes what is left when its context ends, and answers later
//     upgrades with 503. The close comes before the cancel because
//     coder/websocket drops a connection without a close frame when the
//     context of a pending Read (or CloseRead) ends.
//  8. The handler runs for the connection's whole life on fasthttp's hijack
//     goroutine, which recovers no panic: the bridge recovers and logs it
//     and closes the connection with 1011. Middleware that rewrites the
//     response after Next never sees one on a websocket route.
//
// # Wiring
//
// Create one Bridge per app, register its handlers as GET routes, and shut
// it down with the app, for instance from fiber's OnShutdown hook or right
// before the app's own shutdown:
//
//	b := wsbridge.New(wsbridge.Options{Logger: log})
//	app.Get("/ws/live", b.Handler(func(ctx context.Context, c *websocket.Conn, r *http.Request) { ... }))
//	...
//	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
//	defer cancel()
//	_ = b.Shutdown(ctx)
//	_ = app.ShutdownWithContext(ctx)
package wsbridge
