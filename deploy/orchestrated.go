package deploy

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/braidstream/braid/compiler"
	"github.com/braidstream/braid/deployconfig"
	"github.com/braidstream/braid/designer"
	"github.com/braidstream/braid/monitor"
)

// An orchestrated deployment runs in processes this server does not
// start: `braid run --deployment ID` processes that Kubernetes, systemd
// or a shell runs. Deploying one writes its record to the config topic
// (package deployconfig), which those processes follow; the topic, not
// Config.RecordFile, is where it is kept, and a restarted Manager reads
// it back from the start. Until a process reports, the deployment's
// Info says how to start one (RunCommand); once their telemetry arrives,
// Watch's Info of the same id adds that they report.

// ProcessStatus is what one process of an orchestrated deployment last
// wrote to the config topic: the revision it runs and its state
// (deployconfig.StatusState: starting, running, restarting, waiting,
// failed); or what one process of a watched application last reported
// to the telemetry topic: its state (monitor.ProcessReporting, stopped,
// gone), when it reported and its instances.
type ProcessStatus struct {
	Process    string                    `json:"process"`
	Revision   int                       `json:"revision"`
	State      string                    `json:"state"`
	LastReport int64                     `json:"lastReport,omitempty"`
	Instances  []monitor.ProcessInstance `json:"instances,omitempty"`
}

// orchestrated is the config topic as the Manager last read it.
type orchestrated struct {
	// mu guards deps and procs. It is taken after Manager.mu, never
	// before, and never with watchedApps.mu held.
	mu    sync.Mutex
	deps  map[string]orchestratedDep
	procs map[string]*deployconfig.Processes
}

// orchestratedDep is one deployment's record and the Info it makes.
type orchestratedDep struct {
	rec  deployconfig.Deployment
	info Info
}

// configWait bounds how long Run waits, before Ready, to have read the
// config topic: a broker that does not answer must not keep the server
// from serving the rest.
const configWait = 15 * time.Second

// followConfig reads the config topic until ctx ends, closing caughtUp
// once it has read what the topic held.
func (m *Manager) followConfig(ctx context.Context, caughtUp chan<- struct{}) {
	err := m.config.Follow(ctx, func(u deployconfig.Update) {
		switch u.Kind {
		case deployconfig.CaughtUp:
			close(caughtUp)
		case deployconfig.Deployed:
			m.setOrchestrated(u.Deployment)
		case deployconfig.Undeployed:
			m.dropOrchestrated(u.ID)
		default:
			m.orch.mu.Lock()
			p := m.orch.procs[u.ID]
			if p == nil {
				p = deployconfig.NewProcesses(u.ID)
				m.orch.procs[u.ID] = p
			}
			p.Apply(u, time.Now())
			m.orch.mu.Unlock()
		}
	})
	if err != nil {
		m.log.Error("reading the deployment config topic", "topic", m.config.Topic(), "err", err)
	}
}

// setOrchestrated takes a deployment record, read or written: the Info
// comes from its design, compiled here.
func (m *Manager) setOrchestrated(rec deployconfig.Deployment) {
	info := Info{ID: rec.ID, Design: rec.ID, ApplicationID: rec.ApplicationID, Operators: map[string]string{},
		SourceTopics: []string{}, SinkTopics: []string{}}
	if d, err := designer.Decode(rec.Design); err != nil {
		m.log.Warn("the design of an orchestrated deployment does not decode", "deployment", rec.ID, "err", err)
	} else if compiled, err := compiler.Compile(d, compiler.Options{}); err != nil {
		m.log.Warn("the design of an orchestrated deployment does not compile", "deployment", rec.ID, "err", err)
		info.DesignName = d.Name
	} else {
		info = describeCompiled(d, compiled)
		info.ID, info.ApplicationID = rec.ID, rec.ApplicationID
	}
	info.Revision, info.Standbys, info.Guarantee, info.CommitIntervalMs = rec.Revision, rec.Standbys, rec.Guarantee, rec.CommitIntervalMs
	info.SnapshotURL = rec.SnapshotURL
	info.Started, info.Generators, info.Remote, info.DesignDoc = rec.WrittenAt, []GeneratorInfo{}, true, rec.Design
	info.Orchestrated, info.RunCommand, info.Commands = true, deployconfig.RunCommand(rec.ID, m.cfg.Brokers), m.cfg.Commands != nil
	m.orch.mu.Lock()
	defer m.orch.mu.Unlock()
	if old, ok := m.orch.deps[rec.ID]; ok && old.rec.Revision > rec.Revision {
		return // this server wrote a newer one already; the topic brings it next
	}
	m.orch.deps[rec.ID] = orchestratedDep{rec: rec, info: info}
}

func (m *Manager) dropOrchestrated(id string) {
	m.orch.mu.Lock()
	defer m.orch.mu.Unlock()
	delete(m.orch.deps, id)
}

// orchestratedInfo is deployment id's Info, with whether its processes
// report and what each last wrote.
func (m *Manager) orchestratedInfo(id string) (Info, bool) {
	m.orch.mu.Lock()
	dep, ok := m.orch.deps[id]
	var live []deployconfig.Status
	if p := m.orch.procs[id]; p != nil {
		live = p.Live(time.Now())
	}
	m.orch.mu.Unlock()
	if !ok {
		return Info{}, false
	}
	info := dep.info
	info.Processes = []ProcessStatus{}
	for _, s := range live {
		info.Processes = append(info.Processes, ProcessStatus{Process: s.Process, Revision: s.Revision, State: string(s.State)})
	}
	_, info.Reporting = m.watchedInfo(id)
	return info, true
}

// orchestratedInfos are every orchestrated deployment's, but those of
// ids in skip.
func (m *Manager) orchestratedInfos(skip map[string]bool) []Info {
	m.orch.mu.Lock()
	ids := slices.Collect(maps.Keys(m.orch.deps))
	m.orch.mu.Unlock()
	var out []Info
	for _, id := range ids {
		if info, ok := m.orchestratedInfo(id); ok && !skip[id] {
			out = append(out, info)
		}
	}
	return out
}

// DeploymentOf is the id of the deployment of application appID that
// other processes run: an orchestrated deployment's, or else appID
// itself, so that the telemetry of an orchestrated deployment's
// processes shows as that deployment, not beside it.
func (m *Manager) DeploymentOf(appID string) string {
	if m == nil {
		return appID
	}
	m.orch.mu.Lock()
	defer m.orch.mu.Unlock()
	for id, dep := range m.orch.deps {
		if dep.rec.ApplicationID == appID {
			return id
		}
	}
	return appID
}

// deployOrchestrated writes the record of an orchestrated deployment:
// revision 1, or the previous one's + 1. A local deployment of the same
// id stops first.
func (m *Manager) deployOrchestrated(req Request) (Info, error) {
	if req.Instances != 0 {
		return Info{}, &RequestError{Field: "instances", Problem: "the processes you start are the instances of an orchestrated deployment: leave it out"}
	}
	req.Instances = m.cfg.MaxInstances // for check's bounds on standbys
	req, err := m.check(req)
	if err != nil {
		return Info{}, err
	}
	d, rev, err := m.cfg.Designs.GetRevision(req.Design, req.Revision)
	if err != nil {
		return Info{}, err
	}
	if _, err := compiler.Compile(d, compiler.Options{}); err != nil {
		return Info{}, err
	}
	design, err := designer.Encode(d)
	if err != nil {
		return Info{}, fmt.Errorf("deploying %q: encoding its design: %w", req.Design, err)
	}
	if err := m.claimRunning(req.Design); err != nil {
		return Info{}, err
	}
	defer m.unclaim(req.Design)
	if old := m.take(req.Design); old != nil {
		m.shutdown(old)
		m.cfg.Monitor.RemoveDeployment(req.Design)
		m.saveRecords()
	}
	m.mu.Lock()
	delete(m.kept, req.Design)
	m.mu.Unlock()
	// Written even when it lists nothing: the record file's existence
	// tells the next start that this is no new data directory.
	m.saveRecords()
	m.orch.mu.Lock()
	revision := m.orch.deps[req.Design].rec.Revision + 1
	m.orch.mu.Unlock()
	rec := deployconfig.Deployment{ID: req.Design, Revision: revision, DesignRevision: rev.Number, Design: design,
		ApplicationID: designer.ApplicationID(d), Guarantee: req.Guarantee, Standbys: *req.Standbys, CommitIntervalMs: req.CommitIntervalMs,
		SnapshotURL: req.SnapshotURL, WrittenAt: time.Now().UTC()}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := m.config.Put(ctx, rec); err != nil {
		return Info{}, fmt.Errorf("deploying %q: %w", req.Design, err)
	}
	m.setOrchestrated(rec)
	m.log.Info("deployed to processes others start", "deployment", rec.ID, "revision", rec.Revision, "design revision", rev.Number)
	info, _ := m.orchestratedInfo(rec.ID)
	return info, nil
}

// undeployOrchestrated writes deployment id's tombstone, if it is an
// orchestrated one: its processes stop their instances.
func (m *Manager) undeployOrchestrated(id string) (bool, error) {
	m.orch.mu.Lock()
	_, ok := m.orch.deps[id]
	m.orch.mu.Unlock()
	if !ok {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := m.config.Delete(ctx, id); err != nil {
		return true, fmt.Errorf("undeploying %q: %w", id, err)
	}
	m.dropOrchestrated(id)
	m.Unwatch(id)
	return true, nil
}

// isOrchestrated reports whether id is an orchestrated deployment.
func (m *Manager) isOrchestrated(id string) bool {
	m.orch.mu.Lock()
	defer m.orch.mu.Unlock()
	_, ok := m.orch.deps[id]
	return ok
}

// remoteApplication is the application id of deployment id, which other
// processes run.
func (m *Manager) remoteApplication(id string) (string, error) {
	if info, ok := m.orchestratedInfo(id); ok {
		return info.ApplicationID, nil
	}
	if info, ok := m.watchedInfo(id); ok {
		return info.ApplicationID, nil
	}
	return "", &NotDeployedError{ID: id}
}
