// The instances x tasks grid: one row per instance (its state, last
// commit, and crash / crash + wipe disk / stop / start buttons enabled by
// its state), and in
// it one card per task: filled for an active task, outlined for a standby,
// striped for a warm-up replica; with its stream time, rates, a restore
// progress bar while it restores (records restored of the changelog's,
// records/s and time left) and a lag bar for replicas. A rebalance
// that suspends an active task (the eager protocol suspends all, the
// cooperative one only those it takes away) leaves its card in place,
// marked "suspended" and paled, until the task resumes or leaves.
//
// Test ids: instance-<id> (data-state, data-broker-down), broker-<id> (the
// line naming the brokers it cannot reach), crash-<id>, crash-wipe-<id>,
// stop-<id>, start-<id>, add-instance; task-<instance>-<task> (data-task, data-role, data-state:
// running, restoring or suspended for an active task, the role for a
// replica; data-stream-time, data-instance, and data-suspensions: how many
// rebalances suspended the active task on the instance, which shows even a
// suspension shorter than a snapshot's interval) and
// stream-time-<instance>-<task>; restore-<instance>-<task>, the restore
// bar, shown while the task restores (data-restored, data-total: records;
// data-source: snapshot when its stores were loaded from snapshots before
// their changelogs' tails, else changelog; data-skipped: how many
// snapshots were found unusable, each named with why in its title);
// risk-<id>, the one-line answer to "what if it died now" (data-safe,
// data-projected-ms: the worst task's projected downtime, -1 unknown;
// data-riskiest on it and on instance-<id> for the instance whose loss
// would hurt most).

import { h } from '../editor/dom.js'
import { clock, rate, count, millis, since, bytes, age, toMillis, byInstance, byTask } from './format.js'
import { gate } from './replay.js'

const DOWN = new Set(['crashed', 'stopped', 'failed'])
const ROLE_ORDER = { active: 0, warmup: 1, standby: 2 }

export class InstancesGrid {
  // opts: action(instance, verb) -> Promise, add() -> Promise,
  // status(message, kind).
  constructor(root, opts) {
    this.root = root
    this.opts = opts
    this.rows = new Map()
    this.pending = new Set()
    const add = h('button', { type: 'button', testid: 'add-instance', class: 'lv-button', text: '+ Add instance', title: 'start one more instance of the deployment' })
    gate(add)
    add.addEventListener('click', () => this.run(add, () => opts.add()))
    this.summary = h('span', { class: 'lv-muted', testid: 'instances-summary' })
    this.list = h('div', { class: 'lv-instance-list', testid: 'instance-list' })
    root.append(h('div', { class: 'lv-row' }, add, this.summary), this.list)
  }

  async run(button, fn) {
    gate(button, false)
    try {
      await fn()
    } catch (err) {
      this.opts.status(err.message, 'error')
    } finally {
      gate(button, true)
    }
  }

  update(dep) {
    const instances = [...((dep && dep.instances) || [])].sort((a, b) => byInstance(a.id, b.id))
    const seen = new Set()
    let previous = null
    for (const inst of instances) {
      seen.add(inst.id)
      let row = this.rows.get(inst.id)
      if (!row) {
        row = this.makeRow(inst.id)
        this.rows.set(inst.id, row)
      }
      // Keep the rows in order without moving those already in place.
      const want = previous ? previous.el.nextSibling : this.list.firstChild
      if (want !== row.el) this.list.insertBefore(row.el, want)
      // A replayed snapshot's "since" and "ago" are of its moment.
      this.fillRow(row, inst, dep.riskiestInstance === inst.id, dep.replayedAt || Date.now())
      previous = row
    }
    for (const [id, row] of this.rows) {
      if (!seen.has(id)) {
        row.el.remove()
        this.rows.delete(id)
      }
    }
    const up = instances.filter((i) => !DOWN.has(i.state)).length
    this.summary.textContent = `${up} of ${instances.length} instance(s) up · ${dep.standbys ?? 0} standby replica(s) per task`
  }

  // restoreProgress draws a restore-progress event on its task's card,
  // which it adds when no snapshot has shown the task yet: a restore
  // shorter than a snapshot's interval shows too. The next snapshot
  // redraws the card as it is.
  restoreProgress(ev) {
    const row = this.rows.get(ev.instance)
    const d = ev.detail || {}
    if (!row || !ev.task || !(d.total > 0)) return
    // The detail is the task's restore, with where its state came from.
    const t = { id: ev.task, role: 'active', state: 'restoring', restore: d }
    let card = row.cards.get(`${t.id}/active`)
    if (!card) {
      card = makeCard(ev.instance, t)
      row.cards.set(`${t.id}/active`, card)
      for (const e of row.tasks.querySelectorAll('.lv-no-tasks')) e.remove()
      row.tasks.append(card.el)
      card.el.className = `lv-task lv-role-active lv-task-restoring`
      card.el.dataset.role = 'active'
      card.el.dataset.state = 'restoring'
    }
    fillBar(card.bar, { id: ev.instance }, t, toMillis(ev.time))
  }

  makeRow(id) {
    const button = (verb, title, label = verb) => {
      const b = h('button', { type: 'button', class: `lv-button lv-${verb}`, testid: `${verb}-${id}`, text: label, title })
      b.addEventListener('click', () => {
        this.pending.add(id)
        gate(b, false)
        this.opts
          .action(id, verb)
          .then(() => this.opts.status(`${verb}: ${id}`, 'ok'))
          .catch((err) => this.opts.status(`${verb} ${id}: ${err.message}`, 'error'))
          .finally(() => this.pending.delete(id))
      })
      return b
    }
    const row = {
      name: h('strong', { text: id }),
      state: h('span', { class: 'lv-state' }),
      info: h('span', { class: 'lv-muted lv-instance-info' }),
      error: h('div', { class: 'lv-error', hidden: true }),
      broker: h('div', { class: 'lv-broker-down', testid: `broker-${id}`, hidden: true }),
      risk: h('div', { class: 'lv-risk', testid: `risk-${id}`, hidden: true }),
      tasks: h('div', { class: 'lv-tasks' }),
      crash: button('crash', 'kill the instance without a goodbye: its tasks move once the group notices'),
      wipe: button(
        'crash-wipe',
        'kill the instance and delete its state dir, as when its pod is rescheduled on another node: it comes back with no state and restores every store it gets from the changelogs',
        'crash + wipe disk',
      ),
      stop: button('stop', 'stop the instance gracefully: it commits and leaves the group'),
      start: button('start', 'start the instance again'),
      cards: new Map(),
    }
    row.el = h(
      'div',
      { class: 'lv-instance', testid: `instance-${id}`, dataset: { instance: id } },
      h('div', { class: 'lv-instance-head' }, row.name, row.state, row.info, h('span', { class: 'lv-spacer' }), row.crash, row.wipe, row.stop, row.start),
      row.error,
      row.broker,
      row.risk,
      row.tasks,
    )
    return row
  }

  fillRow(row, inst, riskiest, now) {
    row.el.dataset.state = inst.state
    row.el.classList.toggle('lv-down', DOWN.has(inst.state))
    row.state.textContent = inst.state
    row.state.className = `lv-state lv-state-${inst.state}`
    const bits = []
    if (inst.since) bits.push(`${inst.state} since ${since(inst.since, now)}`)
    if (inst.lastCommit) bits.push(`last commit ${since(inst.lastCommit, now)}${inst.commitMs !== undefined ? ` (${millis(inst.commitMs)})` : ''}`)
    row.info.textContent = bits.join(' · ')
    row.error.hidden = !inst.error
    row.error.textContent = inst.error || ''
    fillBroker(row.broker, inst, now)
    fillRisk(row.risk, inst.risk, riskiest)
    row.el.dataset.riskiest = String(riskiest && !!inst.risk)
    row.el.classList.toggle('lv-riskiest', riskiest && !!inst.risk)
    row.el.dataset.brokerDown = String(!!(inst.unreachableBrokers && inst.unreachableBrokers.length))
    const busy = this.pending.has(inst.id)
    const up = inst.state === 'running' || inst.state === 'rebalancing'
    gate(row.crash, !busy && up)
    gate(row.wipe, !busy && up)
    gate(row.stop, !busy && up)
    gate(row.start, !busy && DOWN.has(inst.state))

    const tasks = [...(inst.tasks || [])].sort((a, b) => (ROLE_ORDER[a.role] ?? 3) - (ROLE_ORDER[b.role] ?? 3) || byTask(a.id, b.id))
    const seen = new Set()
    let previous = null
    for (const t of tasks) {
      const key = `${t.id}/${t.role}`
      seen.add(key)
      let card = row.cards.get(key)
      if (!card) {
        card = makeCard(inst.id, t)
        row.cards.set(key, card)
      }
      const want = previous ? previous.el.nextSibling : row.tasks.firstChild
      if (want !== card.el) row.tasks.insertBefore(card.el, want)
      fillCard(card, inst, t, now)
      previous = card
    }
    for (const [key, card] of row.cards) {
      if (!seen.has(key)) {
        card.el.remove()
        row.cards.delete(key)
      }
    }
    if (!tasks.length && !row.tasks.querySelector('.lv-no-tasks')) row.tasks.append(h('span', { class: 'lv-muted lv-no-tasks', text: 'no tasks' }))
    if (tasks.length) for (const e of row.tasks.querySelectorAll('.lv-no-tasks')) e.remove()
  }
}

// fillBroker says which brokers the instance cannot reach and since when:
// while it cannot, it processes and commits nothing, whatever its state.
function fillBroker(el, inst, now) {
  const down = inst.unreachableBrokers || []
  el.hidden = !down.length
  el.textContent = down.map((b) => `broker ${b.broker} unreachable, no answer for ${since(b.since, now).replace(/ ago$/, '')}: processing waits for it`).join(' · ')
  el.title = down.map((b) => `${b.broker}: ${b.error}`).join('\n')
}

// fillRisk says what losing the instance now would do: safe when every
// active task has a caught-up replica elsewhere (or no state), with the
// longest projected downtime; otherwise the worst task and what it would
// replay. The title has every task's projection and its parts.
function fillRisk(el, risk, riskiest) {
  el.hidden = !risk
  if (!risk) return
  const tasks = risk.tasks || []
  const ms = risk.projectedDowntimeMs
  // The task at risk that would stand still longest, unknown the longest.
  const longest = (t) => (t.projectedDowntimeMs < 0 ? Infinity : t.projectedDowntimeMs)
  const bad = tasks.filter((t) => !t.safe).sort((a, b) => longest(b) - longest(a))[0]
  let text
  if (!tasks.length) text = 'safe: no active task to lose'
  else if (!bad) {
    const covered = tasks.some((t) => t.stateless) ? 'a caught-up standby or no state' : 'a caught-up standby'
    text = `safe: every task has ${covered}, ~${millis(ms)}`
  } else if (bad.projectedDowntimeMs < 0) text = `at risk: task ${bad.task} has no replica elsewhere: it would restore its whole changelog`
  else text = `at risk: task ${bad.task} would replay ${count(bad.lag)} records, ~${millis(bad.projectedDowntimeMs)}`
  if (riskiest) text += ' · highest risk'
  el.textContent = text
  el.className = `lv-risk ${risk.safe ? 'lv-risk-safe' : 'lv-risk-bad'}`
  el.dataset.safe = String(risk.safe)
  el.dataset.projectedMs = String(ms)
  el.dataset.riskiest = String(riskiest)
  const how = risk.detectedBy === 'supervisor' ? 'the supervisor removes the dead member' : 'the group waits for the session timeout'
  const rateText = `${rate(risk.restoreRate)} rec/s${risk.restoreRateMeasured ? ' (measured)' : ' (assumed: no restore measured yet)'}`
  el.title = [
    `if this instance died now, each task would stand still from its last record: the gap to the crash (four times its mean interval between records), detection ~${millis(risk.detectionMs)} (${how}, then the group rebalances), replay of the best replica's lag at ${rateText}, and ~${millis(risk.resumeMs)} to resume`,
    ...tasks.map((t) => {
      if (t.stateless) return `${t.task}: no state to replay, ~${millis(t.projectedDowntimeMs)}`
      if (!t.replica) return `${t.task}: no replica on another running instance: a full restore, time unknown`
      return `${t.task}: ${t.role} on ${t.replica}, ${count(t.lag)} records behind (${t.safe ? 'caught up' : 'beyond the acceptable recovery lag'}), ~${millis(t.projectedDowntimeMs)}`
    }),
  ].join('\n')
}

function makeCard(instance, t) {
  const bar = h('div', { class: 'lv-bar', hidden: true }, h('div', { class: 'lv-bar-fill' }), h('span', { class: 'lv-bar-text' }))
  const card = {
    title: h('span', { class: 'lv-task-id', text: t.id }),
    role: h('span', { class: 'lv-task-role' }),
    time: h('div', { class: 'lv-task-time', testid: `stream-time-${instance}-${t.id}`, title: 'stream time: the largest record timestamp the task has processed (UTC)' }),
    rates: h('div', { class: 'lv-task-rates' }),
    bar,
  }
  card.el = h(
    'div',
    { class: 'lv-task', testid: `task-${instance}-${t.id}`, dataset: { task: t.id, instance } },
    h('div', { class: 'lv-task-head' }, card.title, card.role),
    card.time,
    card.rates,
    card.bar,
  )
  return card
}

function fillCard(card, inst, t, now) {
  const el = card.el
  el.className = `lv-task lv-role-${t.role} lv-task-${t.state}`
  el.dataset.role = t.role
  el.dataset.state = t.state
  el.dataset.streamTime = String(t.streamTime ?? -1)
  el.dataset.suspensions = String(t.suspensions || 0)
  card.role.textContent = t.role === t.state || (t.role === 'active' && t.state === 'running') ? t.role : `${t.role} · ${t.state}`
  card.time.textContent = clock(t.streamTime)
  const parts = []
  if (t.role === 'active') {
    parts.push(`in ${rate(t.inPerSec)}/s`, `out ${rate(t.outPerSec)}/s`)
    if (t.lag > 0) parts.push(`lag ${count(t.lag)}`)
    if (t.lateDrops) parts.push(`late ${count(t.lateDrops)}`)
  } else {
    parts.push(`applied to offset ${count(t.processed || 0)}`)
  }
  card.rates.textContent = parts.join(' · ')
  fillBar(card.bar, inst, t, now)
  const paused = t.state === 'suspended' ? ' (a rebalance suspended it: it processes nothing until the assignment says whether it stays)' : ''
  const suspensions = t.suspensions ? `; suspended by ${count(t.suspensions)} rebalance(s) here` : ''
  el.title = `task ${t.id} on ${inst.id}: ${t.role}, ${t.state}${paused}; ${count(t.processed || 0)} records processed${suspensions}`
}

// fillBar draws a task's restore (where its state came from, records
// restored of the total, the rate and the time left) while it restores,
// or a replica's lag. now is the moment shown, for a snapshot's age.
function fillBar(bar, inst, t, now) {
  const fill = bar.firstChild
  const text = bar.lastChild
  const r = t.restore
  if (r && r.total > 0 && t.state === 'restoring') {
    const done = r.restored || 0
    const pct = Math.min(100, (100 * done) / r.total)
    bar.hidden = false
    bar.className = 'lv-bar lv-bar-restore'
    bar.dataset.testid = `restore-${inst.id}-${t.id}`
    bar.dataset.restored = String(done)
    bar.dataset.total = String(r.total)
    bar.dataset.source = r.snapshotId ? 'snapshot' : 'changelog'
    bar.dataset.skipped = String((r.skippedSnapshots || []).length)
    fill.style.width = pct.toFixed(1) + '%'
    const left = r.etaMs > 0 ? ` · ${millis(r.etaMs)} left` : ''
    text.textContent = `${restoreSource(r, done, now)} · ${rate(r.rate || 0)} rec/s${left}`
    bar.title = [
      r.snapshotId
        ? `restoring the task's stores from snapshot ${r.snapshotId} (the oldest loaded), then the changelog records written since: records restored of those to read, at records/s, with the time left`
        : "restoring the task's stores from their changelogs: records restored of the changelog records to read, at records/s, with the time left",
      ...(r.skippedSnapshots || []).map((s) => `skipped snapshot ${s.id}: ${s.reason}`),
    ].join('\n')
    return
  }
  delete bar.dataset.testid
  if ((t.role === 'standby' || t.role === 'warmup') && t.standbyLag) {
    const recs = t.standbyLag.records || 0
    // Log scale: 0 empty, 10 000 records and more full.
    const pct = recs <= 0 ? 0 : Math.min(100, (100 * Math.log10(1 + recs)) / 4)
    bar.hidden = false
    bar.className = 'lv-bar lv-bar-lag'
    fill.style.width = pct.toFixed(1) + '%'
    text.textContent = `lag ${count(recs)} rec · ${millis(t.standbyLag.timeMs || 0)}`
    bar.title = 'how far the replica is behind its changelog'
  } else {
    bar.hidden = true
  }
}

// restoreSource says where a restore's state comes from, with its
// progress: "snapshot 2m 05s old, 39.5 MB in 113 ms, then 8.0k/10.0k
// records of changelog" or "changelog: 12.3k/75.0k records".
function restoreSource(r, done, now) {
  const records = `${count(done)}/${count(r.total)} records`
  if (!r.snapshotId) return `changelog: ${records}`
  return `snapshot ${age(r.snapshotTakenAt, now)} old, ${bytes(r.snapshotBytes || 0)} in ${millis(r.snapshotLoadMs || 0)}, then ${records} of changelog`
}
