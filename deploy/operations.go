package deploy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// List describes every deployment, by id.
func (m *Manager) List() []Info {
	m.mu.Lock()
	deps := make([]*deployment, 0, len(m.deps))
	for _, dep := range m.deps {
		deps = append(deps, dep)
	}
	m.mu.Unlock()
	out := make([]Info, len(deps))
	for i, dep := range deps {
		out[i] = m.describe(dep)
	}
	slices.SortFunc(out, func(x, y Info) int { return strings.Compare(x.ID, y.ID) })
	return out
}

// Get describes one deployment.
func (m *Manager) Get(id string) (Info, error) {
	dep, err := m.find(id)
	if err != nil {
		return Info{}, err
	}
	return m.describe(dep), nil
}

func (m *Manager) find(id string) (*deployment, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if dep := m.deps[id]; dep != nil {
		return dep, nil
	}
	return nil, &NotDeployedError{ID: id}
}

// describe is a deployment's Info with its generators as they are now.
func (m *Manager) describe(dep *deployment) Info {
	info := dep.info
	info.Generators = dep.gens.infos()
	return info
}

// Crash crashes an instance of a deployment (see streams.Supervisor.Crash).
func (m *Manager) Crash(id, instance string) error {
	return m.instanceOp(id, instance, "crashed", (*deployment).crash)
}

// Stop stops an instance gracefully.
func (m *Manager) Stop(id, instance string) error {
	return m.instanceOp(id, instance, "stopped", (*deployment).stopInstance)
}

// Start starts a crashed or stopped instance again.
func (m *Manager) Start(id, instance string) error {
	return m.instanceOp(id, instance, "started", (*deployment).startInstance)
}

// Add starts one more instance and returns its id.
func (m *Manager) Add(id string) (string, error) {
	dep, err := m.find(id)
	if err != nil {
		return "", err
	}
	instance, err := dep.sup.Add()
	if err != nil {
		return "", err
	}
	m.cfg.Monitor.InstanceEvent(id, instance, "added")
	return instance, nil
}

func (d *deployment) crash(instance string) error         { return d.sup.Crash(instance) }
func (d *deployment) stopInstance(instance string) error  { return d.sup.Stop(instance) }
func (d *deployment) startInstance(instance string) error { return d.sup.Start(instance) }

// instanceOp runs op on an instance and tells the monitor. The monitor
// hears of a crash first: the instance reports nothing once dead.
func (m *Manager) instanceOp(id, instance, kind string, op func(*deployment, string) error) error {
	dep, err := m.find(id)
	if err != nil {
		return err
	}
	if kind == "crashed" {
		m.cfg.Monitor.InstanceEvent(id, instance, kind)
		return op(dep, instance)
	}
	if err := op(dep, instance); err != nil {
		return err
	}
	m.cfg.Monitor.InstanceEvent(id, instance, kind)
	return nil
}

// Query looks a key up in a key-value store of a deployment, on whichever
// instance runs the key's task. The key is given as text and passed to the
// store's key serde as a string.
func (m *Manager) Query(id, store, key string) (value any, found bool, err error) {
	dep, err := m.find(id)
	if err != nil {
		return nil, false, err
	}
	known := false
	for _, st := range dep.info.Stores {
		if st.Name == store {
			if st.Type != "key-value" {
				return nil, false, &RequestError{Field: "store", Problem: fmt.Sprintf("%q is a %s store; the store browser reads key-value stores", store, st.Type)}
			}
			known = true
		}
	}
	if !known {
		return nil, false, &RequestError{Field: "store", Problem: fmt.Sprintf("deployment %q has no store %q", id, store)}
	}
	return dep.sup.Get(store, key)
}

// ensureTopics creates the topics that do not exist yet, with
// Config.Partitions partitions each.
func (m *Manager) ensureTopics(topics []string) error {
	if len(topics) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	adm := kadm.NewClient(m.client)
	resp, err := adm.CreateTopics(ctx, int32(m.cfg.Partitions), -1, nil, topics...)
	if err != nil {
		return fmt.Errorf("creating topics %v: %w", topics, err)
	}
	var errs []error
	for _, r := range resp.Sorted() {
		if r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
			errs = append(errs, fmt.Errorf("creating topic %q: %w", r.Topic, r.Err))
		}
	}
	return errors.Join(errs...)
}
