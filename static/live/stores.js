// The store browser: interactive queries against a deployment's stores
// (GET /api/deployments/:id/query). A key-value store answers a key with
// its value and the instance holding it, or, with no key, its rows from
// "from" to "to" (open bounds when empty); a window or session store
// answers a key with its windows. Every row and window shows its
// timestamp: the newest of the records it comes from.
//
// An application run in other processes answers through their store
// servers: a key whose active is down may come from a standby's copy,
// shown as stale with how far behind it is.
//
// Test ids: store-select, store-key, store-from, store-to, store-lookup,
// store-result (data-found, data-instance, data-stale), store-value,
// store-timestamp, store-stale, store-rows.

import { h, clear } from '../editor/dom.js'
import { api } from '../editor/api.js'
import { gate } from './replay.js'

export class StoreBrowser {
  constructor(root, deployment) {
    this.deployment = deployment
    this.types = new Map()
    this.select = h('select', { testid: 'store-select', 'aria-label': 'store' })
    this.key = h('input', { type: 'text', testid: 'store-key', placeholder: 'key', 'aria-label': 'key', spellcheck: 'false' })
    this.from = h('input', { type: 'text', testid: 'store-from', placeholder: 'from', 'aria-label': 'range from', spellcheck: 'false' })
    this.to = h('input', { type: 'text', testid: 'store-to', placeholder: 'to', 'aria-label': 'range to', spellcheck: 'false' })
    this.range = h('span', { class: 'lv-row' }, 'or rows ', this.from, ' to ', this.to)
    // A query reads the stores as they are now, not the moment a replay
    // shows: the button is gated as the acting ones are.
    this.button = h('button', { type: 'submit', class: 'lv-button', testid: 'store-lookup', text: 'Query', title: 'query the live stores' })
    gate(this.button)
    this.result = h('div', { class: 'lv-store-result', testid: 'store-result' })
    this.none = h('p', { class: 'lv-muted', text: 'The deployment has no state store.' })
    const form = h('form', { class: 'lv-row' }, h('label', {}, 'Store ', this.select), h('label', {}, 'Key ', this.key), this.range, this.button)
    form.addEventListener('submit', (e) => {
      e.preventDefault()
      this.query()
    })
    this.select.addEventListener('change', () => this.showRange())
    this.form = form
    root.append(this.none, form, this.result)
    this.names = null
  }

  // setStores lists the deployment's stores (from Info).
  setStores(stores) {
    const list = stores || []
    const names = list.map((s) => `${s.name}:${s.type}`).join('\n')
    if (names === this.names) return
    this.names = names
    const keep = this.select.value
    clear(this.select)
    this.types.clear()
    for (const s of list) {
      this.types.set(s.name, s.type)
      this.select.append(h('option', { value: s.name, text: `${s.name} (${s.join ? 'join buffer, ' : ''}${s.type})`, selected: s.name === keep }))
    }
    this.none.hidden = list.length > 0
    this.form.hidden = list.length === 0
    this.showRange()
  }

  // showRange offers a range only for key-value stores.
  showRange() {
    this.range.hidden = this.types.get(this.select.value) !== 'key-value'
  }

  async query() {
    const store = this.select.value
    if (!store) return
    const params = new URLSearchParams({ store })
    if (this.key.value !== '') params.set('key', this.key.value)
    else if (this.types.get(store) === 'key-value') {
      if (this.from.value !== '') params.set('from', this.from.value)
      if (this.to.value !== '') params.set('to', this.to.value)
    }
    gate(this.button, false)
    clear(this.result)
    try {
      const res = await api('GET', `/api/deployments/${encodeURIComponent(this.deployment)}/query?${params}`)
      this.result.dataset.found = res.found ? 'true' : 'false'
      this.result.dataset.instance = res.instance || ''
      this.result.dataset.stale = res.stale ? 'true' : 'false'
      this.show(res, params.get('key'))
    } catch (err) {
      this.result.dataset.found = 'false'
      this.result.append(h('div', { class: 'lv-error', text: err.message }))
    } finally {
      gate(this.button, true)
    }
  }

  show(res, key) {
    if (res.stale) {
      const behind = res.lag ? `${res.lag} record(s) behind` : 'caught up with what it has seen of the changelog'
      this.result.append(h('div', { class: 'lv-stale', testid: 'store-stale', text: `from standby ${res.instance}, ${behind}: the active does not answer` }))
    }
    if (res.unanswered && res.unanswered.length) {
      this.result.append(h('div', { class: 'lv-stale', text: `rows missing from ${res.unanswered.join(', ')}, which did not answer` }))
    }
    if (!res.found) {
      const what = key === null ? 'no rows' : `no value for ${JSON.stringify(key)}`
      this.result.append(h('div', { class: 'lv-muted', text: `${what} in ${res.store}` }))
      return
    }
    if (res.windows) {
      this.result.append(h('div', { class: 'lv-muted', text: `${res.store}[${JSON.stringify(key)}]: ${res.windows.length} window(s), held by ${res.instance}` }))
      this.result.append(table(['window start', 'end', 'value', 'timestamp'], res.windows.map((w) => [clock(w.start), clock(w.end), JSON.stringify(w.value), stamp(w.timestamp)])))
      return
    }
    if (res.rows) {
      const more = res.truncated ? ' (first ones only)' : ''
      this.result.append(h('div', { class: 'lv-muted', text: `${res.rows.length} row(s) of ${res.store}${more}` }))
      this.result.append(table(['key', 'value', 'timestamp', 'instance'], res.rows.map((r) => [JSON.stringify(r.key), JSON.stringify(r.value), stamp(r.timestamp), r.instance])))
      return
    }
    this.result.append(
      h('div', { class: 'lv-muted', text: `${res.store}[${JSON.stringify(key)}], held by ${res.instance}` }),
      h('pre', { class: 'lv-value', testid: 'store-value', text: JSON.stringify(res.value, null, 2) }),
      h('div', { class: 'lv-muted', testid: 'store-timestamp', text: `timestamp ${stamp(res.timestamp)}` }),
    )
  }
}

function table(head, rows) {
  return h('table', { class: 'lv-table', testid: 'store-rows' },
    h('thead', {}, h('tr', {}, ...head.map((c) => h('th', { text: c })))),
    h('tbody', {}, ...rows.map((r) => h('tr', {}, ...r.map((c) => h('td', { text: c }))))))
}

function clock(ms) {
  return new Date(ms).toISOString().slice(11, 23)
}

// stamp shows a row's timestamp as a UTC date and time with the
// milliseconds since the epoch, which is what records carry; a timestamp
// outside what Date represents shows as the number alone.
function stamp(ms) {
  if (typeof ms !== 'number') return ''
  const d = new Date(ms)
  if (Number.isNaN(d.getTime())) return String(ms)
  return `${d.toISOString().replace('T', ' ').replace('Z', '')} (${ms})`
}
