// Stream-time lanes: for each active task with open windows (or one of a
// windowed store), a horizontal time axis from a minute of stream time
// back to a little ahead, with the task's stream time as a vertical line,
// each open window drawn from its start to its end and its grace period
// shaded up to closesAt. A window-closed event flashes the window and
// moves it to the "closed" list (the last 20); a late-drop event is a mark
// at the record's timestamp, left of stream time. A stream-stream join's
// buffers (windowed stores with no windows that close) get a lane per
// active task of their sub-topology, named by the store, with the span of
// records each holds behind the task's stream time.
//
// Test ids: lane-<task>-<store> (data-stream-time), window-<task>-<start>,
// closed-windows, closed-<n> (newest first), late-mark.

import { h, clear } from '../editor/dom.js'
import { clock, count, millis, activeTasks, byTask, subtopologyOf } from './format.js'

const BACK_MS = 60000
const MIN_AHEAD_MS = 10000
const MAX_CLOSED = 20
const FLASH_MS = 1500

export class Lanes {
  constructor(root) {
    this.root = root
    this.windowedStores = new Set()
    this.joinStores = new Map() // name -> the store's Info, for join buffers
    this.lanesEl = h('div', { class: 'lv-lane-list', testid: 'lane-list' })
    this.empty = h('p', { class: 'lv-muted', text: 'No windowed store is open yet.' })
    this.closedEl = h('ol', { class: 'lv-closed', testid: 'closed-windows' })
    root.append(this.empty, this.lanesEl, h('h3', { text: 'Closed windows' }), this.closedEl)
    this.lanes = new Map()
    this.closed = []
    this.flashing = new Map() // lane key + window start -> {window, until}
    this.late = [] // {task, store, ts, at}
  }

  // setStores names the windowed stores of the deployment (from Info).
  setStores(stores) {
    this.windowedStores = new Set((stores || []).filter((s) => (s.type === 'window' || s.type === 'session') && !s.join).map((s) => s.name))
    this.joinStores = new Map((stores || []).filter((s) => s.join).map((s) => [s.name, s]))
    this.grace = new Map((stores || []).map((s) => [s.name, s.graceMs || 0]))
  }

  update(dep) {
    const now = Date.now()
    const want = []
    for (const [inst, t] of activeTasks(dep)) {
      const stores = new Set((t.windows || []).map((w) => w.store))
      for (const s of this.windowedStores) if (this.storeOfTask(t, s)) stores.add(s)
      for (const [s, info] of this.joinStores) if (info.subtopology === subtopologyOf(t.id)) stores.add(s)
      for (const store of stores) want.push({ inst, t, store })
    }
    want.sort((a, b) => byTask(a.t.id, b.t.id) || (a.store < b.store ? -1 : 1))
    const seen = new Set()
    for (const { inst, t, store } of want) {
      const key = `${t.id}/${store}`
      if (seen.has(key)) continue
      seen.add(key)
      let lane = this.lanes.get(key)
      if (!lane) {
        lane = this.makeLane(t.id, store)
        this.lanes.set(key, lane)
      }
      this.lanesEl.append(lane.el) // keeps them in order
      this.draw(lane, inst, t, store, now)
    }
    for (const [key, lane] of this.lanes) {
      if (!seen.has(key)) {
        lane.el.remove()
        this.lanes.delete(key)
      }
    }
    this.empty.hidden = this.lanes.size > 0
    for (const [k, f] of this.flashing) if (f.until < now) this.flashing.delete(k)
    this.late = this.late.filter((m) => now - m.at < 120000)
  }

  // storeOfTask says whether a windowed store belongs to the task: it has
  // a window of it, or a window-closed event named both.
  storeOfTask(t, store) {
    return (t.windows || []).some((w) => w.store === store) || (this.known && this.known.has(`${t.id}/${store}`))
  }

  makeLane(task, store) {
    const axis = h('div', { class: 'lv-axis' })
    const lane = {
      label: h('div', { class: 'lv-lane-label' }),
      axis,
      el: null,
    }
    lane.el = h('div', { class: 'lv-lane', testid: `lane-${task}-${store}`, dataset: { task, store } }, lane.label, axis)
    return lane
  }

  draw(lane, inst, t, store, now) {
    const st = t.streamTime
    const windows = (t.windows || []).filter((w) => w.store === store)
    const join = this.joinStores.get(store)
    lane.el.dataset.streamTime = String(st)
    lane.el.dataset.windows = String(windows.length)
    lane.el.dataset.join = join ? 'true' : 'false'
    lane.label.textContent = `${t.id} · ${store}${join ? ' (join buffer)' : ''} · ${inst.id} · stream time ${clock(st)}`
    clear(lane.axis)
    if (typeof st !== 'number' || st < 0) {
      lane.axis.append(h('span', { class: 'lv-muted lv-axis-empty', text: 'no stream time yet' }))
      return
    }
    let ahead = MIN_AHEAD_MS
    for (const w of windows) ahead = Math.max(ahead, Math.min(BACK_MS, (w.closesAt || w.end) - st + 2000))
    const from = st - BACK_MS
    const to = st + ahead
    const x = (ms) => (100 * (ms - from)) / (to - from)
    const clip = (a, b) => [Math.max(0, x(a)), Math.min(100, x(b))]
    // Ticks every 10 s of stream time.
    for (let tick = Math.ceil(from / 10000) * 10000; tick <= to; tick += 10000) {
      lane.axis.append(h('span', { class: 'lv-tick', style: `left:${x(tick).toFixed(2)}%`, text: clock(tick, { millis: false }).slice(3) }))
    }
    const drawWindow = (w, extraClass, testid) => {
      const [a, b] = clip(w.start, w.end)
      const [g0, g1] = clip(w.end, w.closesAt || w.end)
      const title = `[${clock(w.start)} – ${clock(w.end)}) grace until ${clock(w.closesAt)} · ${count(w.keys ?? 0)} key(s)`
      if (b > a) lane.axis.append(h('div', { class: `lv-window ${extraClass}`, testid, style: `left:${a.toFixed(2)}%;width:${(b - a).toFixed(2)}%`, title, dataset: { start: String(w.start), end: String(w.end) } }, w.keys !== undefined ? h('span', { text: count(w.keys) }) : null))
      if (g1 > g0) lane.axis.append(h('div', { class: `lv-grace ${extraClass}`, style: `left:${g0.toFixed(2)}%;width:${(g1 - g0).toFixed(2)}%`, title }))
    }
    if (join) {
      // The buffer keeps its side's records for its retention behind the
      // side's latest record; the task's stream time stands in for it.
      const [a, b] = clip(st - join.retentionMs, st)
      const title = `${store} holds the records of its side of the join for ${millis(join.retentionMs)} (window and grace ${millis(join.graceMs)}) behind that side's latest record`
      if (b > a) lane.axis.append(h('div', { class: 'lv-join-span', testid: `join-span-${t.id}-${store}`, style: `left:${a.toFixed(2)}%;width:${(b - a).toFixed(2)}%`, title }))
    }
    for (const w of windows) drawWindow(w, '', `window-${t.id}-${w.start}`)
    for (const [k, f] of this.flashing) if (k.startsWith(`${t.id}/${store}@`) && f.until >= now) drawWindow(f.window, 'lv-flash', `closing-${t.id}-${f.window.start}`)
    for (const m of this.late) {
      if (m.task !== t.id || (m.store && m.store !== store)) continue
      const p = x(m.ts)
      if (p < 0 || p > 100) continue
      lane.axis.append(h('div', { class: 'lv-late', testid: 'late-mark', style: `left:${p.toFixed(2)}%`, title: `late record at ${clock(m.ts)}, dropped at stream time ${clock(m.streamTime)}` }))
    }
    lane.axis.append(h('div', { class: 'lv-now', style: `left:${x(st).toFixed(2)}%`, title: `stream time ${clock(st)}` }))
  }

  // event takes window-closed and late-drop events.
  event(ev) {
    const d = ev.detail || {}
    if (ev.kind === 'window-closed') {
      const w = {
        store: d.store,
        start: d.windowStart,
        end: d.windowEnd,
        closesAt: d.closesAt,
        keys: d.keys,
      }
      if (w.store && ev.task) {
        this.known = this.known || new Set()
        this.known.add(`${ev.task}/${w.store}`)
      }
      if (typeof w.start === 'number') this.flashing.set(`${ev.task}/${w.store}@${w.start}`, { window: w, until: Date.now() + FLASH_MS })
      this.addClosed(ev, w, d.streamTime)
    } else if (ev.kind === 'late-drop') {
      const ts = d.timestamp
      this.late.push({ task: ev.task, store: d.store, ts: typeof ts === 'number' ? ts : d.streamTime ?? 0, streamTime: d.streamTime, at: Date.now() })
      if (this.late.length > 500) this.late.splice(0, this.late.length - 500)
    }
  }

  addClosed(ev, w, streamTime) {
    this.closed.unshift({ ev, w, streamTime })
    if (this.closed.length > MAX_CLOSED) this.closed.length = MAX_CLOSED
    clear(this.closedEl)
    this.closed.forEach((c, i) => {
      const where = [c.ev.task && `task ${c.ev.task}`, c.ev.instance].filter(Boolean).join(' on ')
      const text =
        typeof c.w.start === 'number'
          ? `${c.w.store || ''} [${clock(c.w.start)} – ${clock(c.w.end)})${c.w.keys !== undefined ? ` · ${count(c.w.keys)} key(s)` : ''}${typeof c.streamTime === 'number' ? ` · at stream time ${clock(c.streamTime)}` : ''}`
          : c.ev.message
      // The number is text, not the list's marker: a marker sits outside
      // the scrolling box and was clipped to its last digit from 10 on.
      this.closedEl.append(
        h('li', { testid: `closed-${i}`, class: i === 0 ? 'lv-fresh' : '' }, h('span', { class: 'lv-closed-n', text: `${i + 1}.` }), h('span', { class: 'lv-muted', text: where ? where + ': ' : '' }), text),
      )
    })
  }
}
