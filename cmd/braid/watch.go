package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/braidstream/braid/monitor"
	"github.com/braidstream/braid/web"
)

// runWatch tails a deployment's live stream in the terminal: every event
// as a line (late drops of one task and window grouped, eventGrouper),
// every failover once done as a text timeline (failoverPrinter), and every
// few seconds one line per instance with its tasks.
func runWatch(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("watch", "braid watch <deployment> [--server http://127.0.0.1:8080] [--auth-token TOKEN] [--every 5s] [--wait 30s]", stdout)
	server := fs.String("server", "http://"+web.DefaultListen, "address of `braid serve`")
	token := fs.String("auth-token", os.Getenv("BRAID_AUTH_TOKEN"), "the server's auth token (default $BRAID_AUTH_TOKEN)")
	every := fs.Duration("every", 5*time.Second, "how often to print the instances' tasks; 0: never")
	wait := fs.Duration("wait", 30*time.Second, "how long the deployment may be missing from the server (not yet deployed, or undeployed) before watch gives up, naming those there are; 0: forever")
	// The deployment may come before the flags too.
	var named []string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		named, args = args[:1], args[1:]
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	named = append(named, fs.Args()...)
	if len(named) != 1 {
		return errors.New("watch: name one deployment (a design id), e.g. braid watch orders-demo")
	}
	u, err := url.Parse(*server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("watch: --server %q is not an http(s) address", *server)
	}
	u.Scheme = strings.Replace(u.Scheme, "http", "ws", 1)
	u.Path = "/ws/live"
	u.RawQuery = url.Values{"deployment": {named[0]}}.Encode()
	header := http.Header{}
	if *token != "" {
		header.Set("Authorization", "Bearer "+*token)
	}
	conn, resp, err := websocket.Dial(ctx, u.String(), &websocket.DialOptions{HTTPHeader: header})
	if err != nil {
		if resp != nil {
			return fmt.Errorf("watch: connecting to %s: %s", u.Redacted(), resp.Status)
		}
		return fmt.Errorf("watch: connecting to %s: %w", u.Redacted(), err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(64 << 20)
	fmt.Fprintf(stdout, "watching %s on %s; stop with Ctrl-C\n", named[0], *server)
	var lastSummary time.Time
	missingSince := time.Now() // zero while the deployment is there
	events := newEventGrouper(stdout)
	failovers := newFailoverPrinter(stdout)
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				conn.Close(websocket.StatusNormalClosure, "")
				return nil
			}
			return fmt.Errorf("watch: %w", err)
		}
		var msg monitor.Message
		if err := json.Unmarshal(data, &msg); err != nil {
			return fmt.Errorf("watch: reading a message: %w", err)
		}
		events.tick(time.Now())
		if msg.Snapshot != nil {
			i := slices.IndexFunc(msg.Snapshot.Deployments, func(d monitor.Deployment) bool { return d.ID == named[0] })
			switch {
			case i >= 0:
				missingSince = time.Time{}
				failovers.snapshot(&msg.Snapshot.Deployments[i])
			case missingSince.IsZero():
				missingSince = time.Now()
			case *wait > 0 && time.Since(missingSince) >= *wait:
				conn.Close(websocket.StatusNormalClosure, "")
				there, err := listDeployments(ctx, *server, header)
				if err != nil {
					return fmt.Errorf("watch: %s is not deployed on %s (waited %v); listing those there: %w", named[0], *server, *wait, err)
				}
				return fmt.Errorf("watch: %s is not deployed on %s (waited %v); deployments there: %s",
					named[0], *server, *wait, listOrNone(there))
			}
		}
		switch {
		case msg.Event != nil:
			events.event(msg.Event)
		case msg.Snapshot != nil && *every > 0 && time.Since(lastSummary) >= *every:
			lastSummary = time.Now()
			printSnapshot(stdout, msg.Snapshot, named[0])
		}
	}
}

// listDeployments returns the ids of the server's deployments, sorted,
// from GET /api/deployments.
func listDeployments(ctx context.Context, server string, header http.Header) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(server, "/")+"/api/deployments", nil)
	if err != nil {
		return nil, err
	}
	req.Header = header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", req.URL.Redacted(), resp.Status)
	}
	var infos []struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&infos); err != nil {
		return nil, fmt.Errorf("decoding GET %s: %w", req.URL.Redacted(), err)
	}
	ids := make([]string, len(infos))
	for i, in := range infos {
		ids[i] = in.ID
	}
	slices.Sort(ids)
	return ids, nil
}

// listOrNone is ids joined with ", ", or "none".
func listOrNone(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

func printEvent(w io.Writer, ev *monitor.Event) {
	where := ev.Instance
	if ev.Task != "" {
		where += " " + ev.Task
	}
	fmt.Fprintf(w, "%s %-18s %-22s %s\n", time.UnixMilli(ev.Time).Format("15:04:05.000"), ev.Kind, where, ev.Message)
}

// printSnapshot prints one line per instance: its state and tasks, an
// active task with its stream time, a replica with its lag.
func printSnapshot(w io.Writer, snap *monitor.Snapshot, id string) {
	i := slices.IndexFunc(snap.Deployments, func(d monitor.Deployment) bool { return d.ID == id })
	if i < 0 {
		fmt.Fprintf(w, "-- %s is not deployed\n", id)
		return
	}
	d := snap.Deployments[i]
	fmt.Fprintf(w, "-- %s revision %d, %d instances, %d standby replicas\n", d.ID, d.Revision, len(d.Instances), d.Standbys)
	for _, in := range d.Instances {
		var tasks []string
		for _, t := range in.Tasks {
			switch t.Role {
			case "active":
				st := "-"
				if t.StreamTime >= 0 {
					st = time.UnixMilli(t.StreamTime).Format("15:04:05")
				}
				tasks = append(tasks, fmt.Sprintf("%s[%s %s %.0f/s]", t.ID, t.State, st, t.InPerSec))
			default:
				lag := int64(0)
				if t.StandbyLag != nil {
					lag = t.StandbyLag.Records
				}
				tasks = append(tasks, fmt.Sprintf("%s(%s lag %d)", t.ID, t.Role, lag))
			}
		}
		fmt.Fprintf(w, "   %-12s %-11s %s\n", in.ID, in.State, strings.Join(tasks, " "))
		for _, b := range in.UnreachableBrokers {
			fmt.Fprintf(w, "   %-12s broker %s unreachable, no answer for %v: %s\n", "", b.Broker,
				time.Duration(snap.Time-b.Since)*time.Millisecond, b.Error)
		}
	}
}
