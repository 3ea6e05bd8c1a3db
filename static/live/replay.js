// The time cursor of the live page: a range input over the span of the
// monitor's recorded snapshots (GET /api/deployments/:id/history, one a
// second for the last 10 minutes, kept with the server's data), the
// cursor's clock time and a Live button. Moving the cursor fetches the
// deployment as it was at that moment (GET .../snapshot?at=, the snapshot
// recorded at or before it, with its failovers, timelines and throughput
// of then, and replayedAt: the snapshot's unix ms, the "now" of what it
// says happened "ago") and hands it to onReplay, which draws it instead of the live
// snapshots until Live hands back to them (onLive). One request is in
// flight at a time; a move made meanwhile is fetched when it returns.
//
// Test ids: scrubber (the range input; data-from, data-to: the span, unix
// ms), scrubber-time (the cursor's clock time), replay-live (the Live
// button), replay-state ("live", or "replaying HH:MM:SS" with
// data-replaying="true" and data-time, the unix ms of the snapshot
// shown).
//
// While replaying, the buttons that act on the live deployment (an
// instance's crash, crash + wipe disk, stop and start, Add instance, the
// generators' Start and Stop, Undeploy, and the store browser's Query,
// which reads the stores as they are now) are disabled, titled "replaying:
// press Live to act" (gate); Live enables those their own state allows.

import { api } from '../editor/api.js'
import { h } from '../editor/dom.js'
import { clock } from './format.js'

const SPAN_EVERY_MS = 2000

export const REPLAYING_TITLE = 'replaying: press Live to act'

// replaying is whether the page shows a replayed moment.
export function replaying() {
  return document.body.dataset.replaying === 'true'
}

// gate enables a button that acts on the live deployment when ok (its
// own condition, kept in data-ok for gateAll) and the page is live.
export function gate(button, ok = button.dataset.ok !== 'false') {
  if (button.dataset.acts !== 'live') {
    button.dataset.acts = 'live'
    button.dataset.liveTitle = button.title
  }
  button.dataset.ok = String(ok)
  const locked = replaying()
  button.disabled = locked || !ok
  button.title = locked ? REPLAYING_TITLE : button.dataset.liveTitle
}

// gateAll gates every such button, on entering a replay and on Live.
function gateAll() {
  for (const b of document.querySelectorAll('[data-acts="live"]')) gate(b)
}

export class Scrubber {
  // base is the deployment's API path; opts: onReplay(dep, replay),
  // onLive(), status(message, kind).
  constructor(root, base, opts) {
    this.base = base
    this.opts = opts
    this.replaying = false
    this.wanted = null
    this.busy = false
    this.span = { from: 0, to: 0, instants: [] }
    this.input = h('input', { type: 'range', testid: 'scrubber', min: '0', max: '0', step: '1000', value: '0', disabled: true, 'aria-label': 'time cursor: the moment shown' })
    this.time = h('span', { class: 'lv-scrub-time', testid: 'scrubber-time' })
    this.liveButton = h('button', { type: 'button', class: 'lv-button', testid: 'replay-live', text: 'Live', disabled: true, title: 'back to the live state' })
    this.state = h('span', { class: 'lv-replay-state', testid: 'replay-state', role: 'status', 'aria-live': 'polite', dataset: { replaying: 'false' }, text: 'live' })
    root.append(h('span', { class: 'lv-muted', text: 'Replay', title: 'the recorded snapshots of the last minutes: move the cursor to see the deployment as it was' }), this.input, this.time, this.liveButton, this.state)
    this.input.addEventListener('input', () => this.moved())
    // The span grows while the cursor waits: read it again on a grab.
    this.input.addEventListener('pointerdown', () => this.refresh())
    this.liveButton.addEventListener('click', () => this.live())
  }

  start() {
    this.refresh()
    this.timer = setInterval(() => this.refresh(), SPAN_EVERY_MS)
  }

  // refresh reads the recorded span; while live the cursor sits at its
  // end.
  async refresh() {
    let span
    try {
      span = await api('GET', `${this.base}/history`)
    } catch (err) {
      if (err.status !== 404) console.warn('live view: reading the recorded history', err)
      return
    }
    this.span = span
    const some = (span.instants || []).length > 0
    this.input.disabled = !some
    this.input.min = String(span.from)
    this.input.max = String(span.to)
    this.input.dataset.from = String(span.from)
    this.input.dataset.to = String(span.to)
    this.input.title = some ? `recorded from ${clock(span.from, { millis: false })} to ${clock(span.to, { millis: false })}` : 'nothing recorded yet'
    if (!this.replaying) {
      this.input.value = String(span.to)
      this.time.textContent = some ? clock(span.to, { millis: false }) : ''
    }
  }

  // moved fetches the moment under the cursor, the latest one moved to
  // when a fetch was in flight.
  async moved() {
    this.wanted = Number(this.input.value)
    this.time.textContent = clock(this.wanted, { millis: false })
    this.replaying = true
    this.liveButton.disabled = false
    document.body.dataset.replaying = 'true'
    gateAll()
    if (this.busy) return
    this.busy = true
    try {
      while (this.wanted !== null) {
        const at = this.wanted
        this.wanted = null
        let r
        try {
          r = await api('GET', `${this.base}/snapshot?at=${at}`)
        } catch (err) {
          this.opts.status(`replay: ${err.message}`, 'error')
          continue
        }
        if (!this.replaying) break // Live was pressed meanwhile
        this.state.textContent = `replaying ${clock(r.time, { millis: false })}`
        this.state.dataset.replaying = 'true'
        this.state.dataset.time = String(r.time)
        this.state.classList.add('lv-replaying')
        // replayedAt is the clock of "since" and "ago" in the sections.
        this.opts.onReplay({ ...r.deployment, replayedAt: r.time }, r)
      }
    } finally {
      this.busy = false
    }
  }

  // live returns to the live snapshots.
  live() {
    this.replaying = false
    this.wanted = null
    this.liveButton.disabled = true
    document.body.dataset.replaying = 'false'
    gateAll()
    this.state.textContent = 'live'
    this.state.dataset.replaying = 'false'
    delete this.state.dataset.time
    this.state.classList.remove('lv-replaying')
    this.input.value = String(this.span.to)
    this.time.textContent = this.span.to ? clock(this.span.to, { millis: false }) : ''
    this.opts.onLive()
  }
}
