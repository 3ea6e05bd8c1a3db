// Package web is the designer's HTTP server: a fiber v2 app serving the
// templ pages of package templates, the embedded files of package static
// under /static/, and a JSON API under /api that the pages' scripts use.
// Handlers do HTTP only: they decode a request, call the designer and
// compiler packages, and encode what those return.
//
// # API
//
// Every answer is JSON unless said otherwise. An error is
//
//	{"error": "message", "problems": [{"node", "kind", "param", "message"}]}
//
// with 400 for a body that is not what the endpoint reads (a design's
// JSON error also carries "line", "column" and "path"; a design over
// designer.MaxNodes or MaxEdges is one, with that problem), 401 without the
// token, 403 for a cross-site request, 404 for a design or revision that
// is not there, 413 for a body over Config.BodyLimit, 415 for a mutation
// that is not application/json, and 422 for a design with problems.
// "problems" is always a list, empty when there are none; a problem's
// four fields are always present ("" for a design-level problem's node,
// kind and param).
//
//	GET    /api/catalog                      {"kinds", "groups", "serdes", "roles": {role: [variable]},
//	                                         "limits": {"nodes", "edges"}: designer.MaxNodes and MaxEdges}
//	GET    /api/designs                      [summary], most recently updated first
//	POST   /api/designs                      body: a design ({} or empty: a new empty design "untitled");
//	                                         201 {"design", "revision"}; the id is always a fresh one
//	POST   /api/designs/import               body: a design file (strict: version required); 201 {"design", "revision"}
//	GET    /api/designs/:id                  {"design", "revision"}
//	PUT    /api/designs/:id                  body {"design", "message", "baseRevision"?}: a new revision, {"revision"};
//	                                         409 when baseRevision is given and is not the latest
//	DELETE /api/designs/:id                  204
//	POST   /api/designs/:id/rename           body {"name"}: {"revision"}
//	GET    /api/designs/:id/revisions        [revision], oldest first
//	GET    /api/designs/:id/revisions/:rev   {"design", "revision"}
//	GET    /api/designs/:id/export.json      the design file, as an attachment (?revision=n for an older one)
//	GET    /api/designs/:id/export.go        the design as a Go program (compiler.ExportGo), the attachment
//	                                         main.go, text/x-go (?revision=n for an older one); 422 with problems
//	GET    /api/designs/:id/export.zip       the same as a Go module (compiler.ExportModule: main.go, go.mod, go.sum,
//	                                         Braid's runtime under braid/), the attachment <module>.zip, its files
//	                                         under the folder <module>/
//	POST   /api/validate                     body: a design; {"problems": [...]} (empty when it compiles)
//	POST   /api/expression                   body {"role", "source"}: {"ok": true} or
//	                                         {"ok": false, "error": {"line", "column", "message"}}; 422 for a
//	                                         source over compiler.MaxExprBytes or nested over MaxExprDepth
//	POST   /api/compile                      body: a design; {"appId", "describe", "topics", "stores",
//	                                         "subtopologies": [{"id", "nodes"}], "nodes": {id: {"operator", "parts", "subtopologies"}}}
//	                                         or 422
//	POST   /api/preview                      body {"design", "samples", "partitions"?, "maxRecords"?}:
//	                                         compiler.Preview's JSON, or 422
//	POST   /api/import/describe              body {"text", "name"}: {"design", "notes": [compiler.ImportNote]} (not
//	                                         saved; notes name the nodes whose part the text could not tell), or 400
//	                                         with "line"
//	POST   /api/export/go                    body: a design; main.go as for export.go, or 422
//	POST   /api/export/module                body: a design; the module's zip as for export.zip, or 422
//
// With Config.Deployments and Config.Monitor set, designs run live
// (package deploy; a deployment's id is its design's id):
//
//	GET    /api/deployment-limits            deploy.Limits {"maxInstances", "minCommitIntervalMs", "maxCommitIntervalMs",
//	                                         "snapshotDir"}: the bounds the Deploy dialog shows and the API enforces,
//	                                         and where snapshots go by default
//	GET    /api/deployments                  [deploy.Info], by id: the deployments, and the applications other
//	                                         processes run and report through the telemetry topic (braid run,
//	                                         exported programs), marked "watched" (and "remote"), with "state"
//	                                         (running, degraded, gone, stopped) and "processes" [{"process",
//	                                         "revision", "state" (reporting, stopped, gone), "lastReport",
//	                                         "instances" [{"id", "state"}]}]
//	POST   /api/deployments                  body deploy.Request {"design", "revision"?, "instances"?, "standbys"?,
//	                                         "guarantee"?, "commitIntervalMs"?}: 201 deploy.Info; an absent field
//	                                         takes its default ("standbys": 1, or 0 with one instance; "standbys": 0
//	                                         is none); at most maxInstances instances; a deployed design is
//	                                         redeployed (same application id, state reused);
//	                                         "guarantee" is "at-least-once" (default, commit every 1000 ms) or
//	                                         "exactly-once" (a transaction every 100 ms: read the sinks
//	                                         read-committed); 422 for a bad request or a design with problems;
//	                                         "orchestrated": true (no "instances") writes the deployment to the
//	                                         config topic for `braid run --deployment ID` processes instead of
//	                                         running it here: its Info has "orchestrated", the deployment's
//	                                         "revision" (+1 on each redeploy), "runCommand", "reporting" and
//	                                         "processes" [{"process", "revision", "state"}];
//	                                         "snapshots": true turns on store snapshots, in "snapshotUrl" (file:///dir
//	                                         or s3://...) or by default in snapshotDir/<application id> (422 naming
//	                                         snapshotUrl for a bad one, or none for processes you start); the
//	                                         Info's "snapshotUrl" says where they go
//	GET    /api/deployments/:id              deploy.Info (404 when not deployed)
//	DELETE /api/deployments/:id              204: undeploy (an orchestrated one: its record's tombstone)
//	POST   /api/deployments/:id/instances    201 {"instance"}: one more instance; 422 at maxInstances
//	POST   /api/deployments/:id/instances/:instance/crash|crash-wipe|stop|start
//	                                         204; 404 for an unknown instance, 409 when its state forbids it;
//	                                         crash-wipe also deletes its state dir and starts it again (a run
//	                                         process wipes its own and exits with status 4, to be restarted)
//	POST   /api/deployments/:id/generators   body deploy.GeneratorSpec: 201 {"topic"}; 422 for a bad template;
//	                                         409 when another producer feeds the topic (its latest records lack
//	                                         the braid-generator header), unless "confirmExternal": true
//	DELETE /api/deployments/:id/generators/:topic  204
//	GET    /api/deployments/:id/generators/:topic/sample
//	                                         deploy.GeneratorSample {"topic", "records" [{"key", "value",
//	                                         "headers", "partition", "offset", "timestamp"}], "external" (how
//	                                         many records another producer wrote), "proposal" {"template",
//	                                         "keys", "keyPrefix", "rate", "notes"}}: the latest 10 records of
//	                                         each partition and the generator proposed from them; 422 for a
//	                                         topic the deployment does not read
//	GET    /api/deployments/:id/query?store=&key=&from=&to=&limit=
//	                                         deploy.QueryResult: a key-value store's value of key (and the
//	                                         instance holding it) or, without a key, its rows in [from, to)
//	                                         (at most limit, default 100); a windowed store's windows of key;
//	                                         each with its row's timestamp. An application run elsewhere is
//	                                         queried through its processes' store servers (stale and lag set
//	                                         when a standby answered); 409 when none advertises one, 503 when
//	                                         none answers
//	GET    /api/deployments/:id/failovers    [monitor.FailoverTimeline], newest last: the last 20 failovers (a
//	                                         crash, a stop, an added instance, a probing move), each {"id",
//	                                         "cause", "instance", "at", "end", "done", "sessionTimeoutMs",
//	                                         "tasks" [{"task", "from", "to", "replica", "standbyLag", "restored",
//	                                         "restoreRate", "detectionMs", "recoveryMs", "downtimeMs", "phases"
//	                                         [{"kind", "start", "end", "detail"}]}], "unmoved", "instances"
//	                                         [{"instance", "phases"}]}; a lane's numbers are the failover
//	                                         table's; 404 when not deployed
//	GET    /api/deployments/:id/failovers/:fid
//	                                         monitor.FailoverTimeline: one of them, by its "id"; 404 naming it
//	                                         when the deployment keeps no such failover
//	GET    /api/deployments/:id/history      monitor.HistorySpan {"deployment", "from", "to", "instants",
//	                                         "retentionMs"}: the snapshots recorded of the deployment (one a
//	                                         second, kept 10 minutes with the server's data, monitor.History),
//	                                         from and to unix ms (0 when none is); 404 when not deployed
//	GET    /api/deployments/:id/snapshot?at=:ms
//	                                         monitor.Replay {"at", "time", "deployment", "events"}: the snapshot
//	                                         recorded nearest at or before the moment (unix ms), its
//	                                         "throughput", "failovers" and "timelines" as they stood then, and
//	                                         the last 500 events before it; 400 for an absent or bad at, 404
//	                                         naming the deployment when it is not deployed or has no snapshot
//	                                         at or before the moment
//	GET    /ws/live?deployment=:id           websocket: monitor.Message JSON, a snapshot first, then events
//	                                         and snapshots at most 4 a second (package web/wsbridge)
//	GET    /live/:id                         the live page
//	GET    /deployments/:id/failovers/:fid   the printable report of one failover (templates.FailoverReportPage):
//	                                         its swimlane chart (drawn by the live page's live/swimlanes.js from
//	                                         the timeline's JSON in the page), the moved tasks' numbers and
//	                                         every phase's times, with print CSS; a 404 page naming an unknown one
//	GET    /metrics                          Prometheus text 0.0.4: braid_* series per deployment, instance and
//	                                         task, and the Go runtime's go_* and the process's process_*
//
// A design travels as designer.Encode writes it; a summary and a revision
// as designer.Summary and designer.Revision marshal.
//
// # Security
//
// The server listens on loopback unless told otherwise; on any other
// address it refuses to start without Config.AuthToken. With a token,
// every request needs it: "Authorization: Bearer <token>", or the
// braid_token cookie, which a page request with ?token=<token> sets
// (HttpOnly, SameSite=Strict) before redirecting to the same page without
// the token in its address. Without a token (loopback only) the Host
// header must name a loopback address or localhost, so that a DNS
// rebinding page cannot reach the API.
//
// Mutations (POST, PUT, PATCH, DELETE) are refused when the browser says
// they are cross-site (Sec-Fetch-Site other than same-origin or none) or
// they carry an Origin other than the server's own; API mutations with a
// body must be application/json, which a cross-site form cannot send
// without a preflight. The pages hold no forms that post. Every response
// carries a Content-Security-Policy (scripts only from the server; styles
// also inline, which the graph library sets), X-Content-Type-Options,
// Referrer-Policy and X-Frame-Options.
package web
