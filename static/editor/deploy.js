// Deploying from the editor: a Deploy button opening a dialog (where it
// runs, instances, standby replicas, processing guarantee, commit
// interval, store snapshots) that deploys the latest saved revision and goes to its live
// view; and, while the design is deployed, a "Live" link and an Undeploy
// button. It runs here (local instances of this server) or in processes
// you start (`braid run --deployment ID`, under Kubernetes, systemd or a
// shell), which follow the deployment's record in the config topic.
//
// Test ids: deploy, deploy-dialog, deploy-where (values here, processes),
// deploy-instances, deploy-standbys, deploy-guarantee,
// deploy-commit-interval, deploy-snapshots (a checkbox),
// deploy-snapshot-url (shown while it is checked; empty: the server's
// directory, its placeholder), deploy-submit, deploy-cancel, deploy-error,
// deploy-unsaved, live-link, undeploy-design.

import { h, byTestId, show } from './dom.js'
import { api } from './api.js'

// commitDefaults are the commit intervals, in ms, that a deployment takes
// when asked for none (deploy.Request): 1 s at-least-once, and under
// exactly-once the runtime's default, a transaction every 100 ms.
const commitDefaults = { 'at-least-once': 1000, 'exactly-once': 100 }

export class DeployControls {
  // parent: the toolbar group to put the buttons in. opts: designId,
  // isDirty() says whether there are unsaved changes, save() saves them
  // (a Promise), status(message, kind).
  constructor(parent, opts) {
    this.opts = opts
    this.path = `/api/deployments/${encodeURIComponent(opts.designId)}`
    this.deployButton = h('button', { type: 'button', testid: 'deploy', text: 'Deploy', title: 'run the latest saved revision here or in processes you start, and watch it live' })
    this.deployButton.addEventListener('click', () => this.open())
    this.live = h('a', { class: 'be-live-link', style: 'color:#e03131;font-weight:600;text-decoration:none;align-self:center', testid: 'live-link', href: `/live/${encodeURIComponent(opts.designId)}`, text: '● Live', title: 'the live view of the running deployment' })
    this.undeployButton = h('button', { type: 'button', testid: 'undeploy-design', text: 'Undeploy', title: 'stop the deployment of this design' })
    this.undeployButton.addEventListener('click', () => this.undeploy())
    show(this.live, false)
    show(this.undeployButton, false)
    parent.append(this.deployButton, this.live, this.undeployButton)
    this.refresh()
  }

  // refresh shows the Live link and Undeploy while the design is deployed.
  async refresh() {
    let deployed = null
    try {
      deployed = await api('GET', this.path)
    } catch {
      deployed = null // 404: not deployed; any other error: as if not
    }
    this.deployed = deployed
    show(this.live, !!deployed)
    show(this.undeployButton, !!deployed)
    this.deployButton.textContent = deployed ? 'Redeploy' : 'Deploy'
    document.body.dataset.deployed = deployed ? 'true' : 'false'
  }

  dialog() {
    let dlg = byTestId('deploy-dialog')
    if (dlg) return dlg
    const number = (testid, value, min, max, step = '1') => {
      const input = h('input', { type: 'number', testid, value: String(value), min: String(min), step, required: true })
      if (max !== '') input.max = String(max)
      return input
    }
    // The bounds are the server's (GET /api/deployment-limits), which
    // enforces the same ones; until they arrive the inputs have none.
    this.instances = number('deploy-instances', 3, 1, '')
    this.standbys = number('deploy-standbys', 1, 0, '')
    this.commit = number('deploy-commit-interval', commitDefaults['at-least-once'], 10, '', '10')
    api('GET', '/api/deployment-limits').then(
      (l) => {
        this.instances.max = String(l.maxInstances)
        this.standbys.max = String(l.maxInstances - 1)
        this.commit.min = String(l.minCommitIntervalMs)
        this.commit.max = String(l.maxCommitIntervalMs)
        this.snapshotDir = l.snapshotDir || ''
        this.showSnapshotDefault()
      },
      () => {}, // the server checks the values anyway
    )
    this.where = h(
      'select',
      { testid: 'deploy-where' },
      h('option', { value: 'here', text: 'run here', selected: true }),
      h('option', { value: 'processes', text: 'run by processes you start' }),
    )
    this.guarantee = h(
      'select',
      { testid: 'deploy-guarantee' },
      h('option', { value: 'at-least-once', text: 'at-least-once', selected: true }),
      h('option', { value: 'exactly-once', text: 'exactly-once' }),
    )
    // A commit interval left at one guarantee's default follows the
    // guarantee to its default; one typed in stays.
    let shown = this.guarantee.value
    this.guarantee.addEventListener('change', () => {
      if (Number(this.commit.value) === commitDefaults[shown]) this.commit.value = String(commitDefaults[this.guarantee.value])
      shown = this.guarantee.value
    })
    // Snapshots are off unless checked; checked, they go to the URL
    // typed, or to the server's directory, which the placeholder names.
    this.snapshots = h('input', { type: 'checkbox', testid: 'deploy-snapshots' })
    this.snapshotUrl = h('input', { type: 'text', testid: 'deploy-snapshot-url', style: 'width:260px', spellcheck: 'false' })
    this.snapshots.addEventListener('change', () => this.showSnapshotDefault())
    this.where.addEventListener('change', () => this.showSnapshotDefault())
    this.unsaved = h(
      'p',
      { class: 'be-warning', style: 'color:#d9480f', testid: 'deploy-unsaved' },
      'The design has unsaved changes: deploying saves them first as a new revision.',
    )
    this.error = h('p', { class: 'be-error', testid: 'deploy-error' })
    this.submit = h('button', { type: 'submit', class: 'be-primary', testid: 'deploy-submit', text: 'Deploy' })
    const cancel = h('button', { type: 'button', testid: 'deploy-cancel', text: 'Cancel', on: { click: () => dlg.close() } })
    const field = (label, input, hint) => h('label', { class: 'be-deploy-field', style: 'display:grid;grid-template-columns:170px 140px;gap:2px 10px;align-items:center;margin:8px 0' }, h('span', { text: label }), input, hint ? h('small', { class: 'be-hint', style: 'grid-column:1 / span 2', text: hint }) : null)
    const form = h(
      'form',
      { method: 'dialog', class: 'be-deploy-form', style: 'max-width:440px' },
      h('h2', { text: 'Deploy' }),
      h('p', { class: 'be-hint', text: 'Runs the latest saved revision as one consumer group. Deploying a design that runs already redeploys it with the same application id.' }),
      field('Runs', this.where, 'run here: instances in this server; run by processes you start: braid run --deployment processes under Kubernetes, systemd or a shell, which move to each new revision one at a time'),
      (this.instancesField = field('Instances', this.instances)),
      field('Standby replicas', this.standbys, 'hot copies of each task’s state on other instances'),
      field('Processing guarantee', this.guarantee, 'exactly-once: each commit is one Kafka transaction of outputs, state changes and input offsets; read the outputs read-committed'),
      field('Commit interval (ms)', this.commit),
      field('Store snapshots', this.snapshots, 'a store with no local state (a new or wiped instance) loads the newest snapshot and replays only the changelog written since'),
      (this.snapshotUrlField = h(
        'label',
        { class: 'be-deploy-field', style: 'display:grid;gap:2px;margin:8px 0' },
        h('span', { text: 'Snapshot location (URL)' }),
        this.snapshotUrl,
        h('small', { class: 'be-hint', text: 'file:///dir, or s3://bucket?endpoint=...&use_path_style=true for any S3-compatible store' }),
      )),
      this.unsaved,
      this.error,
      h('div', { class: 'be-row' }, this.submit, cancel),
    )
    this.where.addEventListener('change', () => show(this.instancesField, this.where.value === 'here'))
    form.addEventListener('submit', (e) => {
      e.preventDefault()
      this.deploy()
    })
    dlg = h('dialog', { class: 'be-dialog', testid: 'deploy-dialog' }, form)
    document.body.append(dlg)
    return dlg
  }

  open() {
    const dlg = this.dialog()
    this.error.textContent = ''
    show(this.unsaved, this.opts.isDirty())
    // A redeploy runs where the deployment runs, unless changed.
    if (this.deployed) this.where.value = this.deployed.orchestrated ? 'processes' : 'here'
    show(this.instancesField, this.where.value === 'here')
    if (this.deployed) {
      this.snapshots.checked = !!this.deployed.snapshotUrl
      this.snapshotUrl.value = this.deployed.snapshotUrl || ''
    }
    this.showSnapshotDefault()
    this.submit.textContent = this.opts.isDirty() ? 'Save and deploy' : this.deployed ? 'Redeploy' : 'Deploy'
    dlg.showModal()
    this.instances.focus()
  }

  async deploy() {
    this.error.textContent = ''
    this.submit.disabled = true
    try {
      if (this.opts.isDirty()) {
        await this.opts.save()
        if (this.opts.isDirty()) throw new Error('the design could not be saved; deploy needs a saved revision')
      }
      const body = {
        design: this.opts.designId,
        revision: 0,
        standbys: Number(this.standbys.value),
        guarantee: this.guarantee.value,
        commitIntervalMs: Number(this.commit.value),
      }
      // The processes someone starts are an orchestrated deployment's
      // instances: it has no count of its own.
      if (this.where.value === 'processes') body.orchestrated = true
      else body.instances = Number(this.instances.value)
      if (this.snapshots.checked) {
        body.snapshots = true
        const url = this.snapshotUrl.value.trim()
        if (url) body.snapshotUrl = url
      }
      const info = await api('POST', '/api/deployments', body)
      const id = (info && info.id) || this.opts.designId
      this.opts.status(`Deployed as ${id}`, 'ok')
      window.location.assign(`/live/${encodeURIComponent(id)}`)
    } catch (err) {
      this.error.textContent = err.message
      if (err.problems && err.problems.length && this.opts.onProblems) this.opts.onProblems(err.problems)
    } finally {
      this.submit.disabled = false
    }
  }

  // showSnapshotDefault shows the snapshot location while snapshots are
  // checked, with the server's directory for the design as its
  // placeholder; processes you start need a URL they all reach.
  showSnapshotDefault() {
    if (!this.snapshotUrlField) return
    show(this.snapshotUrlField, this.snapshots.checked)
    const app = `braid-${this.opts.designId}`
    const local = this.where.value === 'here' && this.snapshotDir
    this.snapshotUrl.placeholder = local ? `default: file://${this.snapshotDir}/${app}` : 'required: a location every process reaches'
    this.snapshotUrl.required = this.snapshots.checked && !local
  }

  async undeploy() {
    if (!window.confirm('Undeploy this design? Its instances stop.')) return
    try {
      await api('DELETE', this.path)
      this.opts.status('Undeployed', 'ok')
    } catch (err) {
      this.opts.status(`Undeploy failed: ${err.message}`, 'error')
    }
    this.refresh()
  }
}
