package deployconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// DefaultTopic is the config topic's name unless one is given.
const DefaultTopic = "_braid-deployments"

// recordVersion is the version of the records' JSON; a reader skips, with
// a warning, a record of another version.
const recordVersion = 1

// statusPrefix starts the key of a Status.
const statusPrefix = "status/"

// Deployment is a design deployed to processes that others start: the
// value of key ID.
type Deployment struct {
	Version int `json:"version"`
	// ID names the deployment: `braid run --deployment ID`. No "/".
	ID string `json:"id"`
	// Revision is the deployment's: 1 when first deployed, +1 on each
	// redeploy of ID. Processes move to a higher one in turn.
	Revision int `json:"revision"`
	// DesignRevision is the revision of the design in the designer's
	// store, for people to read; Design is what runs.
	DesignRevision int `json:"designRevision,omitempty"`
	// Design is the design file (designer.Encode).
	Design json.RawMessage `json:"design"`
	// ApplicationID is the consumer group's id and internal topics'
	// prefix.
	ApplicationID string `json:"applicationId"`
	// Guarantee is "at-least-once" or "exactly-once".
	Guarantee string `json:"guarantee"`
	// Standbys per stateful task.
	Standbys int `json:"standbys"`
	// CommitIntervalMs is the instances' commit interval.
	CommitIntervalMs int64 `json:"commitIntervalMs"`
	// SnapshotURL is the blob store of the stores' snapshots
	// (streams.Config.Snapshots), "" when they are off.
	SnapshotURL string `json:"snapshotUrl,omitempty"`
	// WrittenAt is when the designer wrote the record.
	WrittenAt time.Time `json:"writtenAt"`
}

// RecordError says what is wrong with a record, written or read.
type RecordError struct {
	// Key is the record's key.
	Key string
	// Problems lists every problem at once.
	Problems []string
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("deployment record %q: %s", e.Key, strings.Join(e.Problems, "; "))
}

// Validate reports every problem of d at once, as a *RecordError.
func (d Deployment) Validate() error {
	var p []string
	if err := CheckID(d.ID); err != nil {
		p = append(p, err.Error())
	}
	if d.Revision < 1 {
		p = append(p, fmt.Sprintf("revision %d is not 1 or more", d.Revision))
	}
	if len(d.Design) == 0 || !json.Valid(d.Design) {
		p = append(p, "design is not JSON")
	}
	if d.ApplicationID == "" {
		p = append(p, "applicationId is empty")
	}
	if d.Guarantee != "at-least-once" && d.Guarantee != "exactly-once" {
		p = append(p, fmt.Sprintf("guarantee %q is not at-least-once or exactly-once", d.Guarantee))
	}
	if d.Standbys < 0 {
		p = append(p, fmt.Sprintf("standbys %d is negative", d.Standbys))
	}
	if d.CommitIntervalMs <= 0 {
		p = append(p, fmt.Sprintf("commitIntervalMs %d is not positive", d.CommitIntervalMs))
	}
	if len(p) > 0 {
		return &RecordError{Key: d.ID, Problems: p}
	}
	return nil
}

// CheckID reports why id cannot name a deployment.
func CheckID(id string) error {
	switch {
	case id == "":
		return errors.New("the deployment id is empty")
	case strings.Contains(id, "/"):
		return fmt.Errorf("the deployment id %q contains a /", id)
	}
	return nil
}

// Status says what one process of a deployment runs: the value of key
// status/<Deployment>/<Process>.
type Status struct {
	Version    int    `json:"version"`
	Deployment string `json:"deployment"`
	// Process is the process's id (its --instance-id, the prefix of its
	// instances' ids when it runs several); processes take turns at a
	// new revision in the order of these ids.
	Process string `json:"process"`
	// Revision is the deployment revision the process runs, or moves to
	// while State is Restarting; 0 for none.
	Revision int         `json:"revision"`
	State    StatusState `json:"state"`
	// At is when the process wrote the status, by its clock.
	At time.Time `json:"at"`
}

// StatusState is where a process stands with its Revision.
type StatusState string

const (
	// Starting: the process's instances were started and have not all
	// reached running yet.
	Starting StatusState = "starting"
	// Running: every instance of the process runs Revision.
	Running StatusState = "running"
	// Restarting: the process stops its instances to start Revision.
	Restarting StatusState = "restarting"
	// Waiting: the process runs nothing: the deployment is not there
	// (not yet, or undeployed).
	Waiting StatusState = "waiting"
	// Failed: an instance of the process failed at Revision, and the
	// process exited for its orchestrator to restart it.
	Failed StatusState = "failed"
)

// HeartbeatInterval is how often a process writes its Status even when
// nothing changed, and LiveFor how long a Status counts as a live
// process's: a process killed without a word stops holding the others'
// turns once it has passed.
const (
	HeartbeatInterval = time.Second
	LiveFor           = 5 * HeartbeatInterval
)

// statusKey is the key of a process's Status.
func statusKey(deployment, process string) string {
	return statusPrefix + deployment + "/" + process
}

// parseStatusKey splits a Status's key.
func parseStatusKey(key string) (deployment, process string, ok bool) {
	rest, ok := strings.CutPrefix(key, statusPrefix)
	if !ok {
		return "", "", false
	}
	return strings.Cut(rest, "/")
}

// RunCommand is the command line that starts a process of deployment id
// on brokers: what the designer shows while no process reports.
func RunCommand(id string, brokers []string) string {
	return "braid run --deployment " + id + " --brokers " + strings.Join(brokers, ",")
}
