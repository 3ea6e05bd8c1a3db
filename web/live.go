package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/coder/websocket"
	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/braidstream/braid/deploy"
	"github.com/braidstream/braid/designer"
	"github.com/braidstream/braid/monitor"
	"github.com/braidstream/braid/runtime/storeserver"
	"github.com/braidstream/braid/runtime/streams"
	"github.com/braidstream/braid/templates"
)

// liveRoutes adds the deployments API, the live page, its websocket and
// /metrics, when the server has deployments to show.
func (s *Server) liveRoutes() {
	if s.cfg.Deployments == nil || s.cfg.Monitor == nil {
		return
	}
	app := s.app
	app.Get("/live/:id", s.livePage)
	app.Get("/deployments/:id/failovers/:fid", s.failoverReport)
	app.Get("/ws/live", s.bridge.Handler(s.liveSocket))
	s.metricsRegistry = newMetricsRegistry(s.cfg.Monitor)
	app.Get("/metrics", s.metrics)
	app.Get("/api/deployment-limits", s.deploymentLimits)
	api := app.Group("/api/deployments")
	api.Get("", s.listDeployments)
	api.Post("", s.deploy)
	api.Get("/:id", s.getDeployment)
	api.Delete("/:id", s.undeploy)
	api.Post("/:id/instances", s.addInstance)
	api.Post("/:id/instances/:instance/:op", s.instanceOp)
	api.Post("/:id/generators", s.startGenerator)
	api.Delete("/:id/generators/:topic", s.stopGenerator)
	api.Get("/:id/generators/:topic/sample", s.generatorSample)
	api.Get("/:id/query", s.queryStore)
	api.Get("/:id/failovers", s.failovers)
	api.Get("/:id/failovers/:fid", s.failover)
	api.Get("/:id/history", s.history)
	api.Get("/:id/snapshot", s.snapshotAt)
}

// deployError turns the deployment manager's errors into answers.
func deployError(err error) error {
	var (
		nd  *deploy.NotDeployedError
		ng  *deploy.NoGeneratorError
		re  *deploy.RequestError
		ui  *streams.UnknownInstanceError
		ise *streams.InstanceStateError
		ps  designer.Problems
		snr *streams.StoreNotReadyError
		sbe *streams.StoreBusyError
		rem *deploy.RemoteError
		una *storeserver.UnavailableError
		ext *deploy.ExternalProducerError
	)
	switch {
	case errors.As(err, &nd), errors.As(err, &ng), errors.As(err, &ui):
		return errorf(fiber.StatusNotFound, err.Error())
	case errors.As(err, &ise), errors.As(err, &rem), errors.As(err, &ext):
		return errorf(fiber.StatusConflict, err.Error())
	case errors.As(err, &re):
		return errorf(fiber.StatusUnprocessableEntity, err.Error())
	case errors.As(err, &ps):
		return problemsError(problemCount(ps)+" in the design", ps)
	case errors.As(err, &snr), errors.As(err, &sbe), errors.As(err, &una):
		return errorf(fiber.StatusServiceUnavailable, err.Error())
	case errors.Is(err, deploy.ErrNotRunning), errors.Is(err, streams.ErrSupervisorNotRunning):
		return errorf(fiber.StatusServiceUnavailable, err.Error())
	}
	return storeError(err)
}

func (s *Server) listDeployments(c *fiber.Ctx) error {
	return c.JSON(s.cfg.Deployments.List())
}

// deploymentLimits are the bounds the Deploy dialog shows; the
// deployment manager enforces the same ones.
func (s *Server) deploymentLimits(c *fiber.Ctx) error {
	return c.JSON(s.cfg.Deployments.Limits())
}

func (s *Server) getDeployment(c *fiber.Ctx) error {
	info, err := s.cfg.Deployments.Get(c.Params("id"))
	if err != nil {
		return deployError(err)
	}
	return c.JSON(info)
}

func (s *Server) deploy(c *fiber.Ctx) error {
	var req deploy.Request
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	info, err := s.cfg.Deployments.Deploy(req)
	if err != nil {
		return deployError(err)
	}
	return c.Status(fiber.StatusCreated).JSON(info)
}

func (s *Server) undeploy(c *fiber.Ctx) error {
	if err := s.cfg.Deployments.Undeploy(c.Params("id")); err != nil {
		return deployError(err)
	}
	return c.SendStatus(fiber.StatusNoContent)
}

func (s *Server) addInstance(c *fiber.Ctx) error {
	id, err := s.cfg.Deployments.Add(c.Params("id"))
	if err != nil {
		return deployError(err)
	}
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"instance": id})
}

func (s *Server) instanceOp(c *fiber.Ctx) error {
	id, instance := c.Params("id"), c.Params("instance")
	var err error
	switch op := c.Params("op"); op {
	case "crash":
		err = s.cfg.Deployments.Crash(id, instance)
	case "crash-wipe":
		err = s.cfg.Deployments.CrashWipe(id, instance)
	case "stop":
		err = s.cfg.Deployments.Stop(id, instance)
	case "start":
		err = s.cfg.Deployments.Start(id, instance)
	default:
		return errorf(fiber.StatusNotFound, fmt.Sprintf("no instance operation %q: crash, crash-wipe, stop or start", op))
	}
	if err != nil {
		return deployError(err)
	}
	return c.SendStatus(fiber.StatusNoContent)
}

func (s *Server) startGenerator(c *fiber.Ctx) error {
	var spec deploy.GeneratorSpec
	if err := decodeBody(c, &spec); err != nil {
		return err
	}
	if err := s.cfg.Deployments.StartGenerator(c.Params("id"), spec); err != nil {
		return deployError(err)
	}
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"topic": spec.Topic})
}

func (s *Server) stopGenerator(c *fiber.Ctx) error {
	if err := s.cfg.Deployments.StopGenerator(c.Params("id"), c.Params("topic")); err != nil {
		return deployError(err)
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// generatorSample answers what a source topic holds: its latest records
// and the generator proposed from them (deploy.GeneratorSample).
func (s *Server) generatorSample(c *fiber.Ctx) error {
	sample, err := s.cfg.Deployments.GeneratorSample(c.Params("id"), c.Params("topic"))
	if err != nil {
		return deployError(err)
	}
	return c.JSON(sample)
}

func (s *Server) queryStore(c *fiber.Ctx) error {
	q := deploy.Query{Store: c.Query("store"), Key: c.Query("key"), From: c.Query("from"), To: c.Query("to")}
	if q.Store == "" {
		return errorf(fiber.StatusBadRequest, "query: ?store= is required")
	}
	if l := c.Query("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 1000 {
			return errorf(fiber.StatusBadRequest, fmt.Sprintf("query: ?limit=%s is not a number from 1 to 1000", l))
		}
		q.Limit = n
	}
	res, err := s.cfg.Deployments.Query(c.Params("id"), q)
	if err != nil {
		return deployError(err)
	}
	return c.JSON(res)
}

// failovers answers a deployment's failover timelines (the monitor's
// FailoverTimeline), newest last; [] when it has had none.
func (s *Server) failovers(c *fiber.Ctx) error {
	id := c.Params("id")
	if tls, ok := s.cfg.Monitor.Timelines(id); ok {
		return c.JSON(tls)
	}
	if _, err := s.cfg.Deployments.Get(id); err != nil {
		return deployError(err)
	}
	return c.JSON([]monitor.FailoverTimeline{})
}

// known answers nil when the monitor or the deployment manager knows the
// deployment, and the manager's 404 naming it otherwise.
func (s *Server) known(id string) error {
	if _, ok := s.cfg.Monitor.Timelines(id); ok {
		return nil
	}
	if _, err := s.cfg.Deployments.Get(id); err != nil {
		return deployError(err)
	}
	return nil
}

// history answers the span of a deployment's recorded snapshots
// (monitor.HistorySpan).
func (s *Server) history(c *fiber.Ctx) error {
	id := c.Params("id")
	if err := s.known(id); err != nil {
		return err
	}
	return c.JSON(s.cfg.Monitor.History(id))
}

// snapshotAt answers a deployment as recorded at or just before ?at=
// (unix ms): a monitor.Replay.
func (s *Server) snapshotAt(c *fiber.Ctx) error {
	id := c.Params("id")
	raw := c.Query("at")
	at, err := strconv.ParseInt(raw, 10, 64)
	switch {
	case raw == "":
		return errorf(fiber.StatusBadRequest, fmt.Sprintf("snapshot: ?at= is required: the moment in unix milliseconds, such as %d", time.Now().UnixMilli()))
	case err != nil || at <= 0:
		return errorf(fiber.StatusBadRequest, fmt.Sprintf("snapshot: ?at=%s is not a moment: want unix milliseconds, such as %d", raw, time.Now().UnixMilli()))
	}
	if err := s.known(id); err != nil {
		return err
	}
	r, err := s.cfg.Monitor.SnapshotAt(id, at)
	var nse *monitor.NoSnapshotError
	switch {
	case errors.As(err, &nse):
		return errorf(fiber.StatusNotFound, err.Error())
	case err != nil:
		return fmt.Errorf("reading the snapshot of %s at %d: %w", id, at, err)
	}
	return c.JSON(r)
}

func (s *Server) livePage(c *fiber.Ctx) error {
	info, err := s.cfg.Deployments.Get(c.Params("id"))
	var nd *deploy.NotDeployedError
	if errors.As(err, &nd) {
		return s.render(c, fiber.StatusNotFound, templates.ErrorPage(templates.ErrorData{
			Status: fiber.StatusNotFound, Title: "Not deployed",
			Message: fmt.Sprintf("Design %q is not deployed. Deploy it from its editor.", c.Params("id")),
		}))
	}
	if err != nil {
		return deployError(err)
	}
	return s.render(c, fiber.StatusOK, templates.LivePage(templates.LiveProps{
		DeploymentID: info.ID, DesignID: info.Design, DesignName: info.DesignName,
	}))
}

// newMetricsRegistry returns the registry /metrics gathers: the
// monitor's braid_* series, and the Go runtime's (go_*) and the process's
// (process_*), because the deployments' instances run in this process and
// their memory, GC pauses, goroutines and open files are what an operator
// looks at next to their lag. It is the server's own, not the default
// registry, so that two servers in one process (the tests) do not
// collide. The runtime and process collectors cost a scrape a
// ReadMemStats and a read of /proc, nothing per record.
func newMetricsRegistry(m *monitor.Monitor) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.Collector(), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// metrics answers a scrape in the text format 0.0.4. Everything is
// gathered before anything is written, so that a failed gather answers
// 500 as promhttp would.
func (s *Server) metrics(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, monitor.ContentType)
	return monitor.WriteGathered(c, s.metricsRegistry)
}

// liveWriteTimeout bounds one write to a live websocket: a handler whose
// client stopped reading is stuck that long, then drops the client.
const liveWriteTimeout = 10 * time.Second

// liveSocket streams the monitor's messages for one deployment (or all,
// without ?deployment=) to a websocket, until either side ends it. The
// monitor coalesces for a slow client; writes time out so that a client
// that stopped reading cannot hold the handler forever.
func (s *Server) liveSocket(ctx context.Context, conn *websocket.Conn, r *http.Request) {
	deployment := r.URL.Query().Get("deployment")
	sub := s.cfg.Monitor.Subscribe()
	defer sub.Close()
	// The client sends nothing; reading lets the library answer pings
	// and notice a close.
	ctx = conn.CloseRead(ctx)
	for {
		msg, err := sub.Next(ctx)
		if err != nil {
			conn.Close(websocket.StatusGoingAway, "server stopping")
			return
		}
		if deployment != "" {
			if msg = forDeployment(msg, deployment); msg.Type == "" {
				continue
			}
		}
		data, err := json.Marshal(msg)
		if err != nil {
			conn.Close(websocket.StatusInternalError, "encoding failed")
			return
		}
		wctx, cancel := context.WithTimeout(ctx, liveWriteTimeout)
		err = conn.Write(wctx, websocket.MessageText, data)
		cancel()
		if err != nil {
			return
		}
	}
}

// forDeployment keeps of a message what concerns one deployment; an
// event of another comes back empty.
func forDeployment(msg monitor.Message, id string) monitor.Message {
	switch {
	case msg.Event != nil:
		if msg.Event.Deployment != id {
			return monitor.Message{}
		}
	case msg.Snapshot != nil:
		snap := *msg.Snapshot
		snap.Deployments = nil
		for _, d := range msg.Snapshot.Deployments {
			if d.ID == id {
				snap.Deployments = append(snap.Deployments, d)
			}
		}
		if snap.Deployments == nil {
			snap.Deployments = []monitor.Deployment{}
		}
		msg.Snapshot = &snap
	}
	return msg
}
