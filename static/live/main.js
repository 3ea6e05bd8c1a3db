// The live view of a deployment (/live/:deployment). Loads the
// deployment's Info, its design (the deployed revision) and that design's
// compilation, then follows the websocket /ws/live: every snapshot redraws
// the graph's badges, the instances grid, the stream-time lanes, the charts,
// the failover table and the failover swimlanes; every event goes to the
// timeline and the lanes.
// The Info (generators' counts, stores) is read again every 2 s. The time
// cursor (replay.js) draws a recorded snapshot instead, through the same
// render(dep), and the timeline that moment's events, until its Live
// button: live snapshots and events keep arriving meanwhile, and are
// drawn again from then on.
//
// The body's data-live-ready is "true" once the page is wired, and
// data-snapshots counts the snapshots shown. window.braidLive holds the
// state, for debugging.

import { api } from '../editor/api.js'
import { h, byTestId } from '../editor/dom.js'
import { LiveSocket } from './socket.js'
import { LiveGraph } from './graph.js'
import { InstancesGrid } from './instances.js'
import { Lanes } from './lanes.js'
import { Timeline, FailoverTable } from './timeline.js'
import { Swimlanes } from './swimlanes.js'
import { Charts } from './charts.js'
import { StoreBrowser } from './stores.js'
import { Generators } from './generators.js'
import { Scrubber, gate } from './replay.js'

const INFO_EVERY_MS = 2000

// section returns the page's container with the test id, or a new one
// at the end of the page.
function section(testid) {
  return byTestId(testid) || document.body.appendChild(h('section', { class: 'lv-panel', testid }))
}

class LivePage {
  constructor(deployment) {
    this.id = deployment
    this.base = `/api/deployments/${encodeURIComponent(deployment)}`
    this.info = null
    this.dep = null
    this.snapshots = 0
    this.connection = section('connection')
    this.message = section('live-message')
    // An orchestrated deployment's processes are started by someone
    // else: until one reports, the page says how.
    this.runCommand = h('p', { class: 'lv-message', testid: 'run-command', hidden: true })
    this.message.after(this.runCommand)
    this.summary = byTestId('deployment-summary') || h('span')
    this.statusEl = h('span', { class: 'lv-status', testid: 'live-status', role: 'status', 'aria-live': 'polite' })
    this.connection.before(this.statusEl)

    const status = (m, k) => this.status(m, k)
    this.instances = new InstancesGrid(section('instances'), {
      status,
      action: (inst, verb) => api('POST', `${this.base}/instances/${encodeURIComponent(inst)}/${verb}`),
      add: async () => {
        const res = await api('POST', `${this.base}/instances`)
        this.status(`added ${(res && res.instance) || 'an instance'}`, 'ok')
      },
    })
    this.lanes = new Lanes(section('lanes'))
    this.timeline = new Timeline(section('events'))
    this.failovers = new FailoverTable(section('failovers'))
    this.swimlanes = new Swimlanes(section('failover-timeline'), deployment)
    this.charts = new Charts(section('charts'))
    this.stores = new StoreBrowser(section('stores'), deployment)
    this.generators = new Generators(section('generators'), deployment, { status, refresh: () => this.refreshInfo() })
    const bar = h('div', { class: 'lv-replay', testid: 'replay' })
    this.runCommand.after(bar)
    this.scrubber = new Scrubber(bar, this.base, {
      status,
      onReplay: (dep, r) => {
        this.render(dep)
        this.timeline.replay(r.events)
      },
      onLive: () => {
        this.timeline.showLive()
        if (this.dep) this.render(this.dep)
      },
    })
    const undeploy = byTestId('undeploy')
    if (undeploy) {
      gate(undeploy)
      undeploy.addEventListener('click', () => this.undeploy())
    }
  }

  async start() {
    let catalog = null
    try {
      catalog = await api('GET', '/api/catalog')
    } catch (err) {
      console.warn('live view: no catalog', err)
    }
    this.graph = new LiveGraph(section('live-graph-canvas'), catalog)
    await this.refreshInfo() // draws the design too, once there is a deployment
    this.socket = new LiveSocket(this.id, {
      onMessage: (m) => this.onMessage(m),
      onState: (s, delay) => this.onConnection(s, delay),
    })
    this.socket.start()
    this.infoTimer = setInterval(() => this.refreshInfo(), INFO_EVERY_MS)
    this.scrubber.start()
    document.body.dataset.liveReady = 'true'
  }

  async refreshInfo() {
    try {
      const info = await api('GET', this.base)
      const first = !this.info
      this.info = info
      this.showInfo()
      if (first && this.graph && !this.design) await this.loadDesign()
      this.say('')
    } catch (err) {
      if (err.status === 404) {
        this.info = null
        this.say(`${this.id} is not deployed. Deploy it from the editor.`, true)
      } else {
        this.status(`reading the deployment: ${err.message}`, 'error')
      }
    }
  }

  showInfo() {
    const i = this.info
    const gen = (i.generators || []).length
    // A remote application runs in processes of its own, which report
    // through Kafka: the page watches it and drives nothing.
    document.body.dataset.remote = i.remote ? 'true' : 'false'
    document.body.dataset.commands = i.commands ? 'true' : 'false'
    document.body.dataset.orchestrated = i.orchestrated ? 'true' : 'false'
    document.body.dataset.reporting = i.reporting ? 'true' : 'false'
    this.showRunCommand(i)
    // A watched application's processes run a design file (revision 0)
    // or a revision of their own: the revision is shown when there is one.
    const procs = (i.processes || []).map((p) => `${p.process} ${p.state}${p.revision ? ` r${p.revision}` : ''}`).join(', ')
    this.summary.textContent = [
      `app ${i.applicationId}`,
      i.orchestrated ? `revision ${i.revision}, run by processes you start` : i.remote ? 'runs in other processes, watched through the telemetry topic' : `revision ${i.revision}`,
      procs ? `processes: ${procs}` : '',
      i.remote ? '' : `deployed on ${i.instances} instance(s)`,
      `${i.standbys} standby`,
      i.guarantee,
      `commit every ${i.commitIntervalMs} ms`,
      i.snapshotUrl ? `store snapshots in ${i.snapshotUrl}` : '',
      gen ? `${gen} generator(s)` : '',
    ]
      .filter(Boolean)
      .join(' · ')
    this.lanes.setStores(i.stores)
    this.stores.setStores(i.stores)
    this.generators.update(i)
    if (this.graph && this.design) this.graph.operators = i.operators || {}
  }

  // showRunCommand shows, while no process of an orchestrated deployment
  // reports, the command that starts one.
  showRunCommand(i) {
    const waiting = !!(i.orchestrated && !i.reporting && i.runCommand)
    this.runCommand.hidden = !waiting
    if (!waiting) return
    this.runCommand.replaceChildren(
      `No process runs revision ${i.revision} of ${i.id} yet. Start processes, under Kubernetes, systemd or a shell, with `,
      h('code', { testid: 'run-command-text', text: i.runCommand }),
      ' (add --instance-id and --state-dir per process).',
    )
  }

  // loadDesign draws the deployed revision of the design.
  async loadDesign() {
    const i = this.info
    this.design = { nodes: [], edges: [] }
    try {
      if (i.designDoc) {
        // Reported by the application's processes: the design store
        // does not hold it.
        this.design = i.designDoc
      } else {
        const path = `/api/designs/${encodeURIComponent(i.design)}`
        const res = await api('GET', i.revision ? `${path}/revisions/${i.revision}` : path)
        this.design = res.design
      }
    } catch (err) {
      this.status(`reading the design: ${err.message}`, 'error')
      return
    }
    let compiled = null
    try {
      compiled = await api('POST', `/api/compile?appId=${encodeURIComponent(i.applicationId || '')}`, this.design)
    } catch (err) {
      console.warn('live view: the design does not compile', err)
    }
    this.graph.load(this.design, compiled, i.operators)
    if (this.dep) this.graph.update(this.dep)
  }

  onMessage(msg) {
    if (msg.type === 'snapshot' && msg.snapshot) this.onSnapshot(msg.snapshot)
    else if (msg.type === 'event' && msg.event) this.onEvent(msg.event)
  }

  onSnapshot(snap) {
    const dep = (snap.deployments || []).find((d) => d.id === this.id) || null
    this.dep = dep
    this.snapshots++
    document.body.dataset.snapshots = String(this.snapshots)
    if (snap.missedEvents) this.status(`${snap.missedEvents} event(s) were missed (the page fell behind)`, '')
    if (!dep) {
      if (this.info && !this.info.orchestrated) this.say(`${this.id} has no running deployment at the moment.`, true)
      return
    }
    if (!this.scrubber.replaying) this.render(dep)
  }

  // render draws a deployment's state, live or replayed, in every section
  // that shows one.
  render(dep) {
    // A remote application's stores are queried through the store
    // servers its live instances advertise (braid run --advertise).
    const live = (dep.instances || []).some((i) => i.server && (i.state === 'running' || i.state === 'rebalancing'))
    document.body.dataset.queryable = live ? 'true' : 'false'
    const parts = [
      () => this.graph && this.graph.update(dep),
      () => this.instances.update(dep),
      () => this.lanes.update(dep),
      () => this.charts.update(dep),
      () => this.failovers.update(dep),
      () => this.swimlanes.update(dep),
    ]
    for (const p of parts) {
      try {
        p()
      } catch (err) {
        console.error('live view: drawing a snapshot', err)
      }
    }
  }

  onEvent(ev) {
    if (ev.deployment && ev.deployment !== this.id) return
    // A restore's progress moves its bar between snapshots; the timeline
    // tells its start and end.
    if (ev.kind === 'restore-progress') {
      if (!this.scrubber.replaying) this.instances.restoreProgress(ev)
      return
    }
    this.timeline.add(ev)
    if (!this.scrubber.replaying) this.lanes.event(ev)
    if (ev.kind === 'deployment-removed') this.refreshInfo()
    if (ev.kind === 'deployment-added') this.refreshInfo().then(() => this.loadDesign())
  }

  onConnection(state, delay) {
    const el = this.connection
    el.dataset.state = state
    el.className = `lv-connection lv-conn-${state}`
    el.textContent =
      state === 'open' ? '● live' : state === 'connecting' ? 'connecting…' : state === 'retrying' ? `disconnected, retrying in ${(delay / 1000).toFixed(1)} s` : 'closed'
    el.title = state === 'open' ? 'receiving snapshots and events' : 'the live connection is down; what is shown may be stale'
    document.body.classList.toggle('lv-stale', state !== 'open')
  }

  async undeploy() {
    if (!window.confirm(`Undeploy ${this.id}? Its instances stop; their state stays on disk.`)) return
    try {
      await api('DELETE', this.base)
      window.location.assign(`/designs/${encodeURIComponent((this.info && this.info.design) || document.body.dataset.designId || this.id)}`)
    } catch (err) {
      this.status(`undeploy: ${err.message}`, 'error')
    }
  }

  // say shows a lasting message above the page ('' hides it).
  say(text, warn = false) {
    this.message.hidden = !text
    this.message.textContent = text
    this.message.classList.toggle('lv-warn', warn)
  }

  // status shows a passing message in the toolbar.
  status(msg, kind = '') {
    this.statusEl.textContent = msg
    this.statusEl.className = 'lv-status' + (kind === 'error' ? ' lv-bad' : kind === 'ok' ? ' lv-ok' : '')
    clearTimeout(this.statusTimer)
    this.statusTimer = setTimeout(() => (this.statusEl.textContent = ''), kind === 'error' ? 15000 : 5000)
  }
}

async function boot() {
  const id = document.body.dataset.deploymentId
  try {
    if (!id) throw new Error('the page has no data-deployment-id')
    const page = new LivePage(id)
    window.braidLive = page
    await page.start()
  } catch (err) {
    console.error(err)
    const p = h('p', { class: 'lv-fatal', testid: 'live-error', text: `The live view failed to start: ${err.message}` })
    document.body.prepend(p)
  }
}

boot()
