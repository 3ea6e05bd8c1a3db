// The failover swimlanes: each failover timeline of the monitor
// (monitor.FailoverTimeline, a snapshot's dep.timelines and GET
// /api/deployments/:id/failovers) drawn as an SVG chart, one row per
// moved task and one per instance, a thin lane for the tasks that kept
// running (cut where a rebalance suspended them: tl.pauses, under the
// eager protocol), time along the x axis from a second before the
// failure. The
// phases have the colours of the legend; the group's session timeout is
// a bracket from the failure; hovering a phase shows its exact start, end
// and duration (an SVG <title>). An open timeline (done false) ends at
// the snapshot's time, so it grows as snapshots arrive.
//
// Swimlanes is the live page's section: a selector of the failovers,
// newest first (it follows the newest until one is chosen; a choice
// stays), the chosen
// one's chart and a link to its printable report. drawTimeline draws one
// chart; the report page (report.js) uses it too, so that there is one
// drawing.
//
// Test ids: failover-timeline (the section; data-failover, data-done,
// data-count), failover-timeline-select, failover-report-link,
// swimlane-chart (data-failover, data-cause, data-done),
// swimlane-<task> (data-from, data-to, data-detection, data-recovery,
// data-downtime: ms, -1 unknown, the failover table's numbers),
// swimlane-instance-<instance>, swimlane-unmoved (data-tasks; its pauses
// are phases "suspended" with data-task), and each
// phase a rect with data-phase (its kind), data-ms, data-start, data-end;
// session-timeout (data-ms).

import { h, clear } from '../editor/dom.js'
import { clock, count, millis, rate } from './format.js'

const SVG = 'http://www.w3.org/2000/svg'

// PHASES are the phase kinds in the order of the legend, with their
// colour and what they mean.
export const PHASES = [
  { kind: 'processing', colour: '#40c057', label: 'processing' },
  { kind: 'detecting', colour: '#fa5252', label: 'waiting for the group to notice' },
  { kind: 'rebalancing', colour: '#fab005', label: 'rebalancing' },
  { kind: 'restoring', colour: '#4c6ef5', label: 'restoring (a snapshot, if any, then the changelog)' },
  { kind: 'promoting', colour: '#9775fa', label: 'promoting a standby' },
  { kind: 'paused', colour: '#adb5bd', label: 'instance down' },
  { kind: 'suspended', colour: '#e9ecef', label: 'suspended by a rebalance, staying (eager)' },
]
const COLOUR = Object.fromEntries(PHASES.map((p) => [p.kind, p.colour]))
// DOWNTIME underlines a task's downtime.
const DOWNTIME = '#212529'

// Geometry of a chart, in px: it is drawn at the width of its box (1000
// px when that is unknown), so that its text keeps its size.
const DEFAULT_W = 1000
const LABEL_W = 210
const RIGHT = 20
// LABEL_CHARS is how many characters of a row's label fit before the
// chart.
const LABEL_CHARS = 32
const TOP = 40 // room for the session-timeout bracket
const TASK_H = 20
const INSTANCE_H = 12
const UNMOVED_H = 6
const GAP = 5
const AXIS_H = 42
const TICKS = [10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 30000, 60000, 120000]

// s creates an SVG element with attributes and children.
function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag)
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null) continue
    if (k === 'text') el.textContent = v
    else if (k === 'testid') el.setAttribute('data-testid', v)
    else if (k === 'dataset') for (const [dk, dv] of Object.entries(v)) el.setAttribute('data-' + dk, String(dv))
    else el.setAttribute(k, String(v))
  }
  for (const c of children.flat()) if (c) el.append(c)
  return el
}

const title = (text) => s('title', { text })

// causeText says what began a failover.
export function causeText(tl) {
  switch (tl.cause) {
    case 'crash':
      return `crash of ${tl.instance}`
    case 'stop':
      return `stop of ${tl.instance}`
    case 'instance-added':
      return `${tl.instance} added`
    case 'probing':
      return `probing move to ${tl.instance}`
  }
  return `${tl.cause} of ${tl.instance}`
}

// span tells a phase's exact times and duration.
function span(p) {
  return `${clock(p.start)} → ${clock(p.end)} UTC · ${p.end - p.start} ms`
}

// phaseText is a phase's tooltip: what it is, its detail, its times,
// and for a recovery what it replayed.
function phaseText(p, lane, tl) {
  const what = (PHASES.find((x) => x.kind === p.kind) || { label: p.kind }).label
  const lines = [!p.detail ? what : p.detail.startsWith(what) ? p.detail : `${what}: ${p.detail}`, span(p)]
  if (p.open) lines.push('and on since')
  if (p.kind === 'detecting') lines.push(`session timeout ${millis(tl.sessionTimeoutMs)}`)
  if (lane && p.kind === 'restoring') lines.push(`${count(lane.restored)} records restored${lane.restoreRate > 0 ? ` at ${rate(lane.restoreRate)} records/s` : ''}`)
  if (lane && p.kind === 'promoting' && lane.standbyLag >= 0) lines.push(`the standby was ${count(lane.standbyLag)} records behind at the crash`)
  return lines.join('\n')
}

// inside is the short text drawn on a wide enough phase.
function inside(p, lane) {
  const d = `${millis(p.end - p.start)}`
  if (lane && p.kind === 'restoring' && lane.restored > 0) return `restoring ${d} · ${count(lane.restored)} rec @ ${rate(lane.restoreRate)}/s`
  if (lane && p.kind === 'promoting' && lane.standbyLag >= 0) return `promoting ${d} · lag ${count(lane.standbyLag)}`
  if (p.kind === 'detecting') return `noticing ${d}`
  if (p.kind === 'processing') return ''
  return `${p.kind} ${d}`
}

function tickStep(range) {
  return TICKS.find((t) => range / t <= 10) || TICKS[TICKS.length - 1]
}

// shownSpan is the time a chart shows: from a little before the failure
// (a quarter of the failover, 100 ms to the second of processing the
// monitor gives), to a little after its end, where a done failover's
// lanes process on.
function shownSpan(tl) {
  const d = Math.max(0, tl.end - tl.at)
  let from = tl.at - Math.min(1000, Math.max(100, d / 4))
  for (const l of tl.tasks || []) for (const p of l.phases || []) if (p.kind !== 'processing') from = Math.min(from, p.start)
  return [from, Math.max(tl.end + Math.max(100, d / 8), from + 500)]
}

// running is the kept-running lane from from to to, processing but where
// a pause cuts it.
function running(from, to, pauses, detail) {
  const out = []
  let t = from
  for (const p of [...pauses].sort((a, b) => a.start - b.start)) {
    if (p.start > t) out.push({ kind: 'processing', start: t, end: p.start, detail })
    t = Math.max(t, p.end)
  }
  if (t < to) out.push({ kind: 'processing', start: t, end: to, detail })
  return out
}

// drawTimeline returns the SVG chart of one timeline, width px wide.
// atMillis, when given, draws a cursor at that time.
export function drawTimeline(tl, { atMillis, width } = {}) {
  const tasks = tl.tasks || []
  const instances = tl.instances || []
  const unmoved = tl.unmoved || []
  const W = Math.max(500, Math.round(width || DEFAULT_W))
  const [from, to] = shownSpan(tl)
  const x0 = LABEL_W
  const x1 = W - RIGHT
  const X = (t) => x0 + ((Math.min(Math.max(t, from), to) - from) * (x1 - x0)) / (to - from)
  // A done failover's lanes go on as they ended (processing again, an
  // instance down) past its end.
  const last = (phases) =>
    (phases || []).map((p, i, all) => (tl.done && i === all.length - 1 && p.end >= tl.end - 1 ? { ...p, open: true } : p))
  const rows = []
  let y = TOP
  const phaseRects = (phases, top, height, lane, open = true) =>
    (open ? last(phases) : phases).map((p) => {
      const x = X(p.start)
      const w = Math.max(1, X(p.open ? to : p.end) - x)
      const label = inside(p, lane)
      const g = s(
        'g',
        {},
        s('rect', {
          class: `sl-phase sl-${p.kind}`,
          x: x.toFixed(1),
          y: top,
          width: w.toFixed(1),
          height,
          fill: COLOUR[p.kind] || '#868e96',
          dataset: { phase: p.kind, ms: p.end - p.start, start: p.start, end: p.end, open: !!p.open, task: p.task || '' },
        }),
        title(phaseText(p, lane, tl)),
      )
      if (label && height >= TASK_H && label.length * 5.6 + 8 < w) g.append(s('text', { class: 'sl-inside', x: (x + 4).toFixed(1), y: top + height / 2 + 4, text: label }))
      return g
    })

  for (const l of tasks) {
    const replica = l.replica ? ` (${l.replica})` : ''
    const numbers = `detection ${ms(l.detectionMs)} · recovery ${ms(l.recoveryMs)} · downtime ${ms(l.downtimeMs)}`
    rows.push(
      s(
        'g',
        {
          class: 'sl-row sl-task',
          testid: `swimlane-${l.task}`,
          dataset: { task: l.task, from: l.from || '', to: l.to || '', detection: l.detectionMs, recovery: l.recoveryMs, downtime: l.downtimeMs },
        },
        s('text', { class: 'sl-label', x: 4, y: y + TASK_H / 2 + 4 }, s('tspan', { class: 'sl-task-name', text: l.task }), s('tspan', { text: fit(`  ${l.from || '?'} → ${l.to || '?'}`, LABEL_CHARS - l.task.length) }), title(`task ${l.task}: ${l.from || '?'} → ${l.to || '?'}${replica}\n${numbers}`)),
        phaseRects(l.phases, y, TASK_H, l),
        downtimeMark(l, y + TASK_H - 3, X),
      ),
    )
    y += TASK_H + GAP
  }
  if (unmoved.length) {
    const shown = fit(unmoved.join(', '), LABEL_CHARS - 10)
    const detail = `${unmoved.length} task(s) kept running: ${unmoved.join(', ')}`
    const pauses = (tl.pauses || []).map((p) => ({
      kind: 'suspended',
      start: p.start,
      end: p.end,
      task: p.task,
      detail: `task ${p.task} on ${p.instance}, set aside while its instance rebalanced`,
    }))
    rows.push(
      s(
        'g',
        { class: 'sl-row sl-unmoved', testid: 'swimlane-unmoved', dataset: { tasks: unmoved.join(',') } },
        s('text', { class: 'sl-label sl-small', x: 4, y: y + UNMOVED_H / 2 + 4, text: `kept running: ${shown}` }, title(detail)),
        phaseRects(running(from, to, pauses, detail), y + 2, UNMOVED_H, null),
        phaseRects(pauses, y + 2, UNMOVED_H, null, false),
      ),
    )
    y += UNMOVED_H + 4 + GAP
  }
  y += 4
  for (const in_ of instances) {
    rows.push(
      s(
        'g',
        { class: 'sl-row sl-instance', testid: `swimlane-instance-${in_.instance}`, dataset: { instance: in_.instance } },
        s('text', { class: 'sl-label sl-small', x: 4, y: y + INSTANCE_H / 2 + 4, text: fit(in_.instance, LABEL_CHARS + 4) }, title(in_.instance)),
        phaseRects(in_.phases, y, INSTANCE_H, null),
      ),
    )
    y += INSTANCE_H + GAP
  }
  const bottom = y
  const height = bottom + AXIS_H
  const svg = s('svg', {
    class: 'sl-chart',
    testid: 'swimlane-chart',
    viewBox: `0 0 ${W} ${height}`,
    width: '100%',
    role: 'img',
    'aria-label': `failover timeline: ${causeText(tl)}, ${tasks.length} task(s) moved`,
    dataset: { failover: tl.id, cause: tl.cause, done: !!tl.done, from, to },
  })
  svg.append(s('rect', { x: x0, y: TOP - 4, width: x1 - x0, height: bottom - TOP + 4, fill: '#f8f9fa' }))
  // The axis: seconds since the failure.
  const step = tickStep(to - from)
  const axis = s('g', { class: 'sl-axis' }, s('line', { x1: x0, x2: x1, y1: bottom + 2, y2: bottom + 2, stroke: '#868e96' }))
  for (let t = tl.at + Math.ceil((from - tl.at) / step) * step; t <= to; t += step) {
    const x = X(t)
    const rel = (t - tl.at) / 1000
    const text = `${rel > 0 ? '+' : ''}${rel.toFixed(step < 100 ? 2 : step < 1000 ? 1 : 0)} s`
    axis.append(
      s('line', { x1: x, x2: x, y1: TOP - 4, y2: bottom + 6, stroke: '#dee2e6', 'stroke-width': 1 }),
      s('text', { class: 'sl-tick', x, y: bottom + 17, 'text-anchor': 'middle', text }),
    )
  }
  axis.append(s('text', { class: 'sl-axis-title', x: (x0 + x1) / 2, y: bottom + 34, 'text-anchor': 'middle', text: `seconds since the ${causeText(tl)} at ${clock(tl.at)} UTC` }))
  svg.append(axis, ...rows)
  // The failure, and the session timeout the group waits for when no
  // one reports it.
  const at = X(tl.at)
  svg.append(s('line', { class: 'sl-failure', x1: at, x2: at, y1: TOP - 10, y2: bottom, stroke: '#c92a2a', 'stroke-width': 1.5, 'stroke-dasharray': '4 3' }, title(`${causeText(tl)} at ${clock(tl.at)} UTC`)))
  if (tl.sessionTimeoutMs > 0 && (tl.cause === 'crash' || tl.cause === 'stop')) {
    // A timeout that ends past the chart is an open bracket with an arrow.
    const beyond = tl.at + tl.sessionTimeoutMs > to
    const end = X(tl.at + tl.sessionTimeoutMs)
    const by = 14
    svg.append(
      s(
        'g',
        { class: 'sl-session', testid: 'session-timeout', dataset: { ms: tl.sessionTimeoutMs } },
        s('path', { d: beyond ? `M${at},${by + 8} V${by} H${end} m-6,-4 l6,4 l-6,4` : `M${at},${by + 8} V${by} H${end} V${by + 8}`, fill: 'none', stroke: '#c92a2a', 'stroke-width': 1.5 }),
        s('text', { class: 'sl-small', x: at + 4, y: by - 3, text: `session timeout ${millis(tl.sessionTimeoutMs)}${beyond ? ` (ends at +${(tl.sessionTimeoutMs / 1000).toFixed(1)} s)` : ''}` }),
        title(`the group's session timeout: without a report, the group notices a crashed member ${tl.sessionTimeoutMs} ms after its last heartbeat (${clock(tl.at)} → ${clock(tl.at + tl.sessionTimeoutMs)} UTC)`),
      ),
    )
  }
  if (!tl.done) {
    const now = X(tl.end)
    svg.append(
      s('line', { class: 'sl-now', x1: now, x2: now, y1: TOP - 4, y2: bottom, stroke: '#e67700', 'stroke-width': 1.5 }),
      s('text', { class: 'sl-small sl-open', x: x1, y: TOP - 10, 'text-anchor': 'end', text: `in progress · ${clock(tl.end)}` }),
    )
  }
  if (typeof atMillis === 'number' && atMillis >= from && atMillis <= to) {
    svg.append(s('line', { class: 'sl-cursor', x1: X(atMillis), x2: X(atMillis), y1: TOP - 4, y2: bottom, stroke: '#212529', 'stroke-width': 1.5 }, title(`at ${clock(atMillis)} UTC`)))
  }
  return svg
}

// downtimeMark underlines a resumed task's downtime: from its last record
// on the old instance to its first on the new, which may begin before
// the failure.
function downtimeMark(l, y, X) {
  const phases = l.phases || []
  const lastPhase = phases[phases.length - 1]
  if (!(l.downtimeMs >= 0) || phases.length < 2 || lastPhase.kind !== 'processing') return null
  const resumed = lastPhase.start
  const x = X(resumed - l.downtimeMs)
  return s(
    'rect',
    { class: 'sl-downtime', x: x.toFixed(1), y, width: Math.max(1, X(resumed) - x).toFixed(1), height: 3, fill: DOWNTIME, dataset: { ms: l.downtimeMs } },
    title(`downtime ${l.downtimeMs} ms: no record of ${l.task} processed from ${clock(resumed - l.downtimeMs)} (its last on ${l.from}) to ${clock(resumed)} UTC (its first on ${l.to})`),
  )
}

// fit shortens a label to n characters, with an ellipsis: the whole is
// in its tooltip.
function fit(text, n) {
  return text.length <= n ? text : text.slice(0, Math.max(1, n - 1)) + '…'
}

function ms(v) {
  return typeof v === 'number' && v >= 0 ? `${v} ms` : '—'
}

// legend is the phases' colours and the session-timeout mark.
export function legend() {
  const item = (colour, text) => h('span', { class: 'sl-legend-item' }, swatch(colour), text)
  return h(
    'div',
    { class: 'sl-legend', testid: 'swimlane-legend' },
    PHASES.map((p) => item(p.colour, p.label)),
    item(DOWNTIME, 'downtime (last record to first record)'),
    h('span', { class: 'sl-legend-item' }, bracket(), 'session timeout'),
  )
}

function swatch(colour) {
  const svg = s('svg', { width: 14, height: 10, viewBox: '0 0 14 10', 'aria-hidden': 'true' }, s('rect', { width: 14, height: 10, rx: 2, fill: colour }))
  return svg
}

function bracket() {
  return s('svg', { width: 14, height: 10, viewBox: '0 0 14 10', 'aria-hidden': 'true' }, s('path', { d: 'M1,9 V2 H13 V9', fill: 'none', stroke: '#c92a2a', 'stroke-width': 1.5 }))
}

// reportURL is the printable report of a failover.
export function reportURL(deployment, id) {
  return `/deployments/${encodeURIComponent(deployment)}/failovers/${encodeURIComponent(id)}`
}

export class Swimlanes {
  constructor(root, deployment) {
    this.root = root
    this.deployment = deployment
    root.dataset.count = '0'
    this.chosen = null // a failover's id, or null: the newest
    this.select = h('select', { testid: 'failover-timeline-select', 'aria-label': 'failover to show' })
    this.select.addEventListener('change', () => {
      this.chosen = this.select.value
      this.last = ''
      this.draw()
    })
    this.report = h('a', { class: 'lv-button', testid: 'failover-report-link', target: '_blank', rel: 'noopener', text: 'Report', title: 'a printable report of this failover' })
    this.summary = h('span', { class: 'lv-muted sl-summary' })
    this.empty = h('p', { class: 'lv-muted', testid: 'failover-timeline-empty', text: 'No failover yet: its timeline shows here when an instance crashes, stops or is added.' })
    this.head = h('div', { class: 'lv-row' }, h('label', {}, 'Failover ', this.select), this.report, this.summary)
    this.chart = h('div', { class: 'sl-chart-wrap' })
    root.append(this.empty, this.head, legend(), this.chart)
    this.list = []
    this.last = ''
    this.show(false)
  }

  show(any) {
    this.empty.hidden = any
    for (const el of [this.head, this.chart, this.root.querySelector('.sl-legend')]) el.hidden = !any
  }

  // update draws the deployment's timelines as of atMillis (the
  // snapshot's time when not given: the live page's).
  update(dep, atMillis) {
    let list = [...((dep && dep.timelines) || [])]
    if (typeof atMillis === 'number') list = list.filter((t) => t.at <= atMillis)
    list.sort((a, b) => b.at - a.at || Number(b.id) - Number(a.id))
    this.list = list
    this.atMillis = atMillis
    this.draw()
  }

  draw() {
    const list = this.list
    this.root.dataset.count = String(list.length)
    this.show(list.length > 0)
    const ids = list.map((t) => t.id + (t.done ? '' : '*')).join(',')
    if (ids !== this.select.dataset.ids) {
      this.select.dataset.ids = ids
      clear(this.select)
      for (const t of list) this.select.append(h('option', { value: t.id, text: `#${t.id} ${causeText(t)} at ${clock(t.at, { millis: false })}${t.done ? '' : ' (in progress)'}` }))
    }
    if (!list.length) return
    let tl = this.chosen !== null && list.find((t) => t.id === this.chosen)
    if (!tl) {
      this.chosen = null
      tl = list[0]
    }
    this.select.value = tl.id
    const key = `${JSON.stringify(tl)}@${this.atMillis}@${this.chart.clientWidth}`
    if (key === this.last) return
    this.last = key
    this.root.dataset.failover = tl.id
    this.root.dataset.done = String(!!tl.done)
    this.report.href = reportURL(this.deployment, tl.id)
    const moved = (tl.tasks || []).length
    this.summary.textContent = `${moved} task(s) moved, ${(tl.unmoved || []).length} kept running · ${tl.done ? `over in ${millis(tl.end - tl.at)}` : 'in progress'}`
    this.chart.replaceChildren(drawTimeline(tl, { atMillis: this.atMillis, width: this.chart.clientWidth }))
  }
}
