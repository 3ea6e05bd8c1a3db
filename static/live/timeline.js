// The failover timeline: the deployment's events, newest on top and
// filterable by kind, and the table of failovers (task, from -> to, cause,
// replica, detection, recovery and downtime in ms, restored records).
//
// Test ids: event-filter, events-list, event-<seq> (data-kind);
// failover-table, failover-<n> (data-task, data-downtime).

import { h, clear } from '../editor/dom.js'
import { clock, count, toMillis } from './format.js'

const MAX_EVENTS = 500

const KINDS = [
  'window-closed',
  'late-drop',
  'restore-started',
  'restore-finished',
  'standby-started',
  'standby-promoted',
  'rebalance',
  'instance-crashed',
  'instance-stopped',
  'instance-started',
  'instance-added',
  'task-assigned',
  'task-revoked',
  'task-failed-over',
  'error',
  'deployment-added',
  'deployment-removed',
]

// Filters: everything, everything but the busy window and late-drop
// events, or one kind.
const ALL = ''
const NOT_NOISY = '(no window / late)'
const NOISY = new Set(['window-closed', 'late-drop'])

export class Timeline {
  constructor(root) {
    this.events = []
    this.seqs = new Set()
    this.filter = h('select', { testid: 'event-filter', 'aria-label': 'show events of kind' })
    this.filter.append(h('option', { value: ALL, text: 'all kinds' }), h('option', { value: NOT_NOISY, text: 'all but windows and late drops' }))
    for (const k of KINDS) this.filter.append(h('option', { value: k, text: k }))
    this.filter.addEventListener('change', () => this.render())
    this.countEl = h('span', { class: 'lv-muted' })
    this.list = h('ol', { class: 'lv-event-list', testid: 'events-list' })
    root.append(h('div', { class: 'lv-row' }, h('label', {}, 'Show ', this.filter), this.countEl), this.list)
  }

  matches(ev) {
    const f = this.filter.value
    if (f === ALL) return true
    if (f === NOT_NOISY) return !NOISY.has(ev.kind)
    return ev.kind === f
  }

  add(ev) {
    if (ev.seq !== undefined) {
      if (this.seqs.has(ev.seq)) return
      this.seqs.add(ev.seq)
    }
    if (ev.kind && !KINDS.includes(ev.kind) && ![...this.filter.options].some((o) => o.value === ev.kind)) {
      this.filter.append(h('option', { value: ev.kind, text: ev.kind }))
    }
    this.events.push(ev)
    if (this.events.length > MAX_EVENTS) {
      const gone = this.events.splice(0, this.events.length - MAX_EVENTS)
      for (const g of gone) this.seqs.delete(g.seq)
    }
    if (this.matches(ev)) {
      this.list.prepend(this.row(ev))
      while (this.list.childElementCount > MAX_EVENTS) this.list.lastChild.remove()
    }
    this.countEl.textContent = `${this.events.length} event(s)`
  }

  row(ev) {
    const where = [ev.instance, ev.task && `task ${ev.task}`].filter(Boolean).join(' · ')
    return h(
      'li',
      { class: `lv-event lv-kind-${ev.kind}`, testid: `event-${ev.seq ?? ''}`, dataset: { kind: ev.kind || '' }, title: ev.detail ? JSON.stringify(ev.detail) : '' },
      h('time', { text: clock(toMillis(ev.time)) }),
      h('span', { class: 'lv-kind', text: ev.kind }),
      where ? h('span', { class: 'lv-where', text: where }) : null,
      h('span', { class: 'lv-event-message', text: ev.message || '' }),
    )
  }

  render() {
    clear(this.list)
    const shown = this.events.filter((e) => this.matches(e))
    for (let i = shown.length - 1; i >= 0; i--) this.list.append(this.row(shown[i]))
  }
}

export class FailoverTable {
  constructor(root) {
    this.body = h('tbody')
    this.empty = h('p', { class: 'lv-muted', testid: 'failovers-empty', text: 'No failover yet: crash or stop an instance to see one.' })
    const heads = ['task', 'from → to', 'cause', 'replica', 'detection', 'recovery', 'downtime', 'restored', 'at']
    this.table = h(
      'table',
      { class: 'lv-table', testid: 'failover-table' },
      h('thead', {}, h('tr', {}, heads.map((t) => h('th', { text: t, title: HELP[t] || '' })))),
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
          h('td', { class: 'lv-num', text: ms(f.detectionMs) }),
          h('td', { class: 'lv-num', text: ms(f.recoveryMs) }),
          h('td', { class: 'lv-num lv-strong', testid: `downtime-${i}`, text: ms(f.downtimeMs) }),
          h('td', { class: 'lv-num', text: typeof f.restored === 'number' ? count(f.restored) : '—' }),
          h('td', { text: clock(toMillis(f.at), { millis: false }) }),
        ),
      )
    })
  }
}

const HELP = {
  replica: 'what the new instance had of the task: a hot standby, a warm-up replica, or nothing (restored from the changelog)',
  detection: 'ms from the old instance going away to the group noticing (rebalance)',
  recovery: 'ms from the assignment to the first record processed on the new instance',
  downtime: 'ms the task processed nothing: from its last record on the old instance to its first on the new',
  restored: 'changelog records restored before processing again',
}
