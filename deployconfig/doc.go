// Package deployconfig owns the deployments' config topic
// (DefaultTopic, "_braid-deployments"): the one definition of the record
// a designer writes to deploy a design to processes it does not run
// itself, and of the status records those processes write back, with
// the Client that writes them and follows the topic.
//
// Kafka Connect's distributed mode is the model. The topic is compacted
// and has one partition, so that every reader sees every record in one
// order. Key <id> holds a Deployment: the design, its revision (1, then
// +1 on each redeploy of the id) and the settings its processes run it
// with; a tombstone (a nil value) undeploys it. Key status/<id>/<process>
// holds a Status: the revision a process runs and whether it is
// restarting, written on every change and every HeartbeatInterval, so
// that processes can take turns at a new revision (a rolling change)
// with nothing but the topic between them. Deployment ids contain no
// "/", so the two kinds of key never meet.
//
// The designer (braid serve, package deploy) writes Deployments and reads
// them back from the start when it restarts; `braid run --deployment ID`
// processes read them and write Statuses. Neither places processes:
// whoever runs them (Kubernetes, systemd, a shell) does.
package deployconfig
