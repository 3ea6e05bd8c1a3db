// The failover timeline: the deployment's events, newest on top and
// filterable by kind, and the table of failovers (task, from -> to, cause,
// replica, detection in ms and how the failure was noticed, recovery and
// downtime in ms, the downtime projected before a crash, restored records).
//
// While the time cursor replays a moment, the list shows that moment's
// events (the last 500 before it, from GET .../snapshot?at=) and the live
// ones are kept aside, still arriving, until Live shows them again.
//
// Test ids: event-filter, events-list (data-replaying), events-count,
// event-<seq> (data-kind, data-time: unix ms;
// a group of repeated events has data-group="true" and data-count, and its
// text in event-group-text);
// failover-table, failover-<n> (data-task, data-downtime), detection-<n>
// (data-detected-by), downtime-<n>, projected-<n> (data-projected: ms, -1
// none; data-safe).

import { h, clear } from '../editor/dom.js'
import { clock, count, toMillis } from './format.js'

const MAX_EVENTS = 500

const KINDS = [
  'window-closed',
  'late-drop',
  'restore-started',
  'restore-finished',
  'snapshot-taken',
  'standby-started',
  'standby-promoted',
  'rebalance',
  'instance-crashed',
  'instance-crash-wiped',
  'instance-stopped',
  'instance-started',
  'instance-added',
  'task-assigned',
  'task-revoked',
  'task-resumed',
  'task-failed-over',
  'broker-unreachable',
  'broker-reachable',
  'error',
  'deployment-added',
  'deployment-removed',
]

// Filters: everything, everything but the busy window and late-drop
// events, or one kind.
const ALL = ''
const NOT_NOISY = '(no window / late)'
const NOISY = new Set(['window-closed', 'late-drop'])

// Repeated events: the late drops of one task and window are one row with
// a count, updated in place, so that they do not push the rare events
// (failovers, rebalances, restores) out of sight. The monitor also sends a
// late-drop event for several records (detail.suppressed more).
const GROUPED = new Set(['late-drop'])
const LABEL = { 'late-drop': 'late record dropped' }

// groupKey is the kind, task and window of a grouped event; '' for an
// event shown alone.
export function groupKey(ev) {
  if (!GROUPED.has(ev.kind)) return ''
  const d = ev.detail || {}
  return [ev.deployment || '', ev.kind, ev.task || '', d.store || '', d.windowStart ?? '', d.windowEnd ?? ''].join('|')
}

// eventCount is how many occurrences an event stands for.
function eventCount(ev) {
  const n = ev.detail && ev.detail.suppressed
  return 1 + (typeof n === 'number' && n > 0 ? n : 0)
}

// book is a list of events: the live one or a replayed moment's.
function book() {
  return {
    entries: [], // oldest first: {ev, key, count, last, row}
    groups: new Map(), // group key -> entry
    seqs: new Set(),
    total: 0,
  }
}

export class Timeline {
  constructor(root) {
    this.live = book()
    this.shown = this.live
    this.filter = h('select', { testid: 'event-filter', 'aria-label': 'show events of kind' })
    this.filter.append(h('option', { value: ALL, text: 'all kinds' }), h('option', { value: NOT_NOISY, text: 'all but windows and late drops' }))
    for (const k of KINDS) this.filter.append(h('option', { value: k, text: k }))
    this.filter.addEventListener('change', () => this.render())
    this.countEl = h('span', { class: 'lv-muted', testid: 'events-count' })
    this.list = h('ol', { class: 'lv-event-list', testid: 'events-list', dataset: { replaying: 'false' } })
    root.append(h('div', { class: 'lv-row' }, h('label', {}, 'Show ', this.filter), this.countEl), this.list)
  }

  matches(ev) {
    const f = this.filter.value
    if (f === ALL) return true
    if (f === NOT_NOISY) return !NOISY.has(ev.kind)
    return ev.kind === f
  }

  // replay shows a replayed moment's events, oldest first, instead of
  // the live ones.
  replay(events) {
    this.detach()
    this.shown = book()
    for (const ev of events || []) this.add(ev, this.shown)
    this.list.dataset.replaying = 'true'
    this.render()
  }

  // showLive shows the live events again, with those that arrived while
  // replaying.
  showLive() {
    if (this.shown === this.live) return
    this.detach()
    this.shown = this.live
    this.list.dataset.replaying = 'false'
    this.render()
  }

  // detach forgets the rows of the book shown, which render replaces.
  detach() {
    for (const e of this.shown.entries) e.row = null
  }

  // add adds an event to a book, the live one unless told.
  add(ev, b = this.live) {
    if (ev.seq !== undefined) {
      if (b.seqs.has(ev.seq)) return
      b.seqs.add(ev.seq)
    }
    if (ev.kind && !KINDS.includes(ev.kind) && ![...this.filter.options].some((o) => o.value === ev.kind)) {
      this.filter.append(h('option', { value: ev.kind, text: ev.kind }))
    }
    b.total += eventCount(ev)
    const key = groupKey(ev)
    const group = key && b.groups.get(key)
    if (group) {
      group.count += eventCount(ev)
      group.last = ev
      if (group.row) this.fill(group.row, group)
    } else {
      const entry = { ev, key, count: eventCount(ev), last: ev, row: null }
      b.entries.push(entry)
      if (key) b.groups.set(key, entry)
      if (b === this.shown && this.matches(ev)) {
        entry.row = this.row(entry)
        this.list.prepend(entry.row)
      }
      this.trim(b)
    }
    if (b === this.shown) this.count()
  }

  count() {
    const b = this.shown
    this.countEl.textContent = `${b.total} event(s) in ${b.entries.length} row(s)${b === this.live ? '' : ' at the moment replayed'}`
  }

  // trim keeps MAX_EVENTS rows, dropping the oldest frequent ones first.
  trim(b) {
    while (b.entries.length > MAX_EVENTS) {
      let i = b.entries.findIndex((e) => NOISY.has(e.ev.kind))
      if (i < 0) i = 0
      const [gone] = b.entries.splice(i, 1)
      if (gone.key) b.groups.delete(gone.key)
      if (gone.ev.seq !== undefined) b.seqs.delete(gone.ev.seq)
      if (gone.row) gone.row.remove()
    }
  }

  row(entry) {
    const li = h('li', { class: `lv-event lv-kind-${entry.ev.kind}`, testid: `event-${entry.ev.seq ?? ''}`, dataset: { kind: entry.ev.kind || '', time: String(toMillis(entry.ev.time)) } })
    this.fill(li, entry)
    return li
  }

  // fill writes an entry into its row: one event, or a group with its
  // count and the time of its last event.
  fill(li, entry) {
    clear(li)
    const ev = entry.ev
    const where = [ev.instance, ev.task && `task ${ev.task}`].filter(Boolean).join(' · ')
    li.title = entry.key ? entry.last.message || '' : ev.detail ? JSON.stringify(ev.detail) : ''
    if (!entry.key) {
      li.append(
        h('time', { text: clock(toMillis(ev.time)) }),
        h('span', { class: 'lv-kind', text: ev.kind }),
        where ? h('span', { class: 'lv-where', text: where }) : null,
        h('span', { class: 'lv-event-message', text: ev.message || '' }),
      )
      return
    }
    const d = ev.detail || {}
    li.dataset.group = 'true'
    li.dataset.count = String(entry.count)
    const win = typeof d.windowStart === 'number' ? `window [${clock(d.windowStart)} – ${clock(d.windowEnd)})` : ''
    const text = [ev.task && `task ${ev.task}`, win, d.store && `of ${d.store}`].filter(Boolean).join(', ')
    const times = entry.count > 1 && entry.last !== ev ? `${clock(toMillis(ev.time))}–${clock(toMillis(entry.last.time))}` : clock(toMillis(ev.time))
    li.append(
      h('time', { text: times }),
      h('span', { class: 'lv-kind', text: ev.kind }),
      h('span', { class: 'lv-event-message', testid: 'event-group-text', text: `${LABEL[ev.kind] || ev.kind} ×${entry.count} — ${text}` }),
    )
  }

  render() {
    clear(this.list)
    const entries = this.shown.entries
    for (let i = entries.length - 1; i >= 0; i--) {
      const e = entries[i]
      e.row = this.matches(e.ev) ? this.row(e) : null
      if (e.row) this.list.append(e.row)
    }
    this.count()
  }
}

export class FailoverTable {
  constructor(root) {
    this.body = h('tbody')
    this.empty = h('p', { class: 'lv-muted', testid: 'failovers-empty', text: 'No failover yet: crash or stop an instance to see one.' })
    // The durations are whole milliseconds: the unit is in the header.
    // The numbers' headers are right-aligned, as the numbers are.
    const heads = ['task', 'from → to', 'cause', 'replica', 'detection (ms)', 'recovery (ms)', 'downtime (ms)', 'projected (ms)', 'restored (records)', 'at']
    const numeric = new Set(['detection (ms)', 'recovery (ms)', 'downtime (ms)', 'projected (ms)', 'restored (records)'])
    this.table = h(
      'table',
      { class: 'lv-table', testid: 'failover-table' },
      h('thead', {}, h('tr', {}, heads.map((t) => h('th', { text: t, class: numeric.has(t) ? 'lv-num' : '', title: HELP[t.split(' (')[0]] || '' })))),
      this.body,
    )
    root.append(this.empty, h('div', { class: 'lv-table-wrap' }, this.table))
    this.last = ''
  }

  update(dep) {
    const list = [...((dep && dep.failovers) || [])].sort((a, b) => toMillis(b.at) - toMillis(a.at))
    const key = JSON.stringify(list)
    if (key === this.last) return
    this.last = key
    this.empty.hidden = list.length > 0
    this.table.hidden = list.length === 0
    this.table.dataset.rows = String(list.length)
    clear(this.body)
    list.forEach((f, i) => {
      const ms = (v) => (typeof v === 'number' ? String(Math.round(v)) : '—')
      this.body.append(
        h(
          'tr',
          { testid: `failover-${i}`, dataset: { task: f.task || '', downtime: String(f.downtimeMs ?? '') } },
          h('td', { text: f.task }),
          h('td', { text: `${f.from || '?'} → ${f.to || '?'}` }),
          h('td', { text: f.cause || '' }),
          h('td', { text: f.replica || '' }),
          h('td', { class: 'lv-num', testid: `detection-${i}`, dataset: { detectedBy: f.detectedBy || '' }, text: detection(f, ms) }),
          h('td', { class: 'lv-num', text: ms(f.recoveryMs) }),
          h('td', { class: 'lv-num lv-strong', testid: `downtime-${i}`, text: ms(f.downtimeMs) }),
          projected(f, i, ms),
          h('td', { class: 'lv-num', text: typeof f.restored === 'number' ? count(f.restored) : '—' }),
          h('td', { text: clock(toMillis(f.at), { millis: false }) }),
        ),
      )
    })
  }
}

// projected is the cell of the downtime projected before the crash, and
// whether the projection called the loss safe.
function projected(f, i, ms) {
  const known = typeof f.projectedDowntimeMs === 'number' && f.projectedDowntimeMs >= 0
  const td = h('td', {
    class: 'lv-num',
    testid: `projected-${i}`,
    dataset: { projected: String(known ? f.projectedDowntimeMs : -1), safe: String(!!f.projectedSafe) },
    text: known ? ms(f.projectedDowntimeMs) : '—',
  })
  if (known) td.title = `projected before the crash: ${f.projectedSafe ? 'safe (a caught-up replica)' : 'at risk'}`
  return td
}

// detection is the detection time and, when known, how the failure was
// noticed: "12 · supervisor".
function detection(f, ms) {
  const t = ms(f.detectionMs)
  return f.detectedBy ? `${t} · ${f.detectedBy}` : t
}

const HELP = {
  replica: 'what the new instance had of the task: a hot standby, a warm-up replica, or nothing (restored from the changelog)',
  detection:
    'ms from the old instance going away to the group noticing (rebalance), and how it noticed: supervisor (the supervisor saw the crash and removed the member), session-timeout (nobody removed it: the group waited for its session to time out) or leave (a graceful stop)',
  recovery: 'ms from the assignment to the first record processed on the new instance',
  downtime: 'ms the task processed nothing: from its last record on the old instance to its first on the new',
  projected:
    'ms of downtime the page projected for the task just before the crash ("what if it died now"): detection, replay of its best replica\'s lag and resuming; — for a stop or when nothing was projected',
  restored: 'changelog records restored before processing again',
}
