package web

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/braidstream/braid/monitor"
	"github.com/braidstream/braid/templates"
)

// One failover of a deployment: its timeline as JSON, and its printable
// report (templates.FailoverReportPage), whose chart the live page's
// swimlanes module draws from that JSON.

// findFailover returns the deployment's failover timeline fid: a 404
// naming both when the deployment is not deployed or keeps no such
// failover.
func (s *Server) findFailover(id, fid string) (monitor.FailoverTimeline, error) {
	tls, ok := s.cfg.Monitor.Timelines(id)
	if !ok {
		if _, err := s.cfg.Deployments.Get(id); err != nil {
			return monitor.FailoverTimeline{}, deployError(err)
		}
	}
	for _, tl := range tls {
		if tl.ID == fid {
			return tl, nil
		}
	}
	return monitor.FailoverTimeline{}, errorf(fiber.StatusNotFound,
		fmt.Sprintf("deployment %q has no failover %q: it keeps its last %d failovers, listed at /api/deployments/%s/failovers",
			id, fid, len(tls), id))
}

// failover answers one failover timeline (monitor.FailoverTimeline).
func (s *Server) failover(c *fiber.Ctx) error {
	tl, err := s.findFailover(c.Params("id"), c.Params("fid"))
	if err != nil {
		return err
	}
	return c.JSON(tl)
}

// failoverReport renders the printable report of one failover; an
// unknown deployment or failover is a 404 page that says which.
func (s *Server) failoverReport(c *fiber.Ctx) error {
	id := c.Params("id")
	tl, err := s.findFailover(id, c.Params("fid"))
	var he *httpError
	if errors.As(err, &he) && he.status == fiber.StatusNotFound {
		return s.render(c, fiber.StatusNotFound, templates.ErrorPage(templates.ErrorData{
			Status: fiber.StatusNotFound, Title: "No such failover", Message: he.body.Error,
		}))
	}
	if err != nil {
		return err
	}
	// The monitor keeps the failovers of a deployment undeployed since:
	// the design's name is then unknown.
	name := ""
	if info, err := s.cfg.Deployments.Get(id); err == nil {
		name = info.DesignName
	}
	return s.render(c, fiber.StatusOK, templates.FailoverReportPage(reportProps(id, name, tl)))
}

// reportProps tells a failover timeline for the report page.
func reportProps(id, designName string, tl monitor.FailoverTimeline) templates.FailoverReportProps {
	p := templates.FailoverReportProps{
		DeploymentID: id, DesignName: designName, FailoverID: tl.ID, Title: causeTitle(tl),
		Began: clockUTC(tl.At), Ended: clockUTC(tl.End), Lasted: strconv.FormatInt(tl.End-tl.At, 10) + " ms",
		SessionTimeout: strconv.FormatInt(tl.SessionTimeoutMs, 10) + " ms", Done: tl.Done,
		Unmoved: strings.Join(tl.Unmoved, ", "), Timeline: tl,
	}
	if p.Unmoved == "" {
		p.Unmoved = "none"
	}
	for _, l := range tl.Tasks {
		p.Tasks = append(p.Tasks, templates.FailoverReportTask{
			Task: l.Task, From: l.From, To: orDash(l.To), Replica: orDash(l.Replica),
			Detection: msText(l.DetectionMs), Recovery: msText(l.RecoveryMs), Downtime: msText(l.DowntimeMs),
			DetectionMs: strconv.FormatInt(l.DetectionMs, 10), RecoveryMs: strconv.FormatInt(l.RecoveryMs, 10),
			DowntimeMs: strconv.FormatInt(l.DowntimeMs, 10),
			Restored:   strconv.FormatInt(l.Restored, 10), RestoreRate: rateText(l.RestoreRate), StandbyLag: msText(l.StandbyLag),
		})
		p.Phases = appendPhases(p.Phases, "task "+l.Task, l.Phases)
	}
	for _, in := range tl.Instances {
		p.Phases = appendPhases(p.Phases, in.Instance, in.Phases)
	}
	return p
}

func appendPhases(out []templates.FailoverReportPhase, lane string, phases []monitor.Phase) []templates.FailoverReportPhase {
	for _, ph := range phases {
		out = append(out, templates.FailoverReportPhase{Lane: lane, Kind: ph.Kind, Start: clockUTC(ph.Start), End: clockUTC(ph.End),
			Ms: strconv.FormatInt(ph.End-ph.Start, 10), Detail: ph.Detail})
	}
	return out
}

// causeTitle says what began a failover, as the live page's swimlanes do.
func causeTitle(tl monitor.FailoverTimeline) string {
	switch tl.Cause {
	case "instance-added":
		return tl.Instance + " added"
	case "probing":
		return "probing move to " + tl.Instance
	}
	return tl.Cause + " of " + tl.Instance
}

func clockUTC(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000")
}

// msText is a number of the failover table: "—" when unknown (-1).
func msText(v int64) string {
	if v < 0 {
		return "—"
	}
	return strconv.FormatInt(v, 10)
}

func rateText(v float64) string {
	if v <= 0 {
		return "—"
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
