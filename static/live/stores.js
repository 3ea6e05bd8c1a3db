// The store browser: choose a key-value store of the deployment, type a
// key, and see its value and the instance that answered (GET
// /api/deployments/:id/query?store=&key=).
//
// Test ids: store-select, store-key, store-lookup, store-result
// (data-found, data-instance).

import { h, clear } from '../editor/dom.js'
import { api } from '../editor/api.js'

export class StoreBrowser {
  constructor(root, deployment) {
    this.deployment = deployment
    this.select = h('select', { testid: 'store-select', 'aria-label': 'store' })
    this.key = h('input', { type: 'text', testid: 'store-key', placeholder: 'key', 'aria-label': 'key', spellcheck: 'false' })
    this.button = h('button', { type: 'submit', class: 'lv-button', testid: 'store-lookup', text: 'Look up' })
    this.result = h('div', { class: 'lv-store-result', testid: 'store-result' })
    this.none = h('p', { class: 'lv-muted', text: 'The deployment has no key-value store.' })
    const form = h('form', { class: 'lv-row' }, h('label', {}, 'Store ', this.select), h('label', {}, 'Key ', this.key), this.button)
    form.addEventListener('submit', (e) => {
      e.preventDefault()
      this.lookup()
    })
    this.form = form
    root.append(this.none, form, this.result)
    this.names = null
  }

  // setStores lists the deployment's stores (from Info); only key-value
  // ones can be queried by key.
  setStores(stores) {
    const kv = (stores || []).filter((s) => s.type === 'key-value').map((s) => s.name)
    const names = kv.join('\n')
    if (names === this.names) return
    this.names = names
    const keep = this.select.value
    clear(this.select)
    for (const n of kv) this.select.append(h('option', { value: n, text: n, selected: n === keep }))
    this.none.hidden = kv.length > 0
    this.form.hidden = kv.length === 0
  }

  async lookup() {
    const store = this.select.value
    const key = this.key.value
    if (!store) return
    this.button.disabled = true
    clear(this.result)
    try {
      const q = `store=${encodeURIComponent(store)}&key=${encodeURIComponent(key)}`
      const res = await api('GET', `/api/deployments/${encodeURIComponent(this.deployment)}/query?${q}`)
      this.result.dataset.found = res && res.found ? 'true' : 'false'
      this.result.dataset.instance = (res && res.instance) || ''
      if (res && res.found) {
        this.result.append(
          h('div', { class: 'lv-muted', text: `${store}[${JSON.stringify(key)}] — answered by ${res.instance || 'an instance'}` }),
          h('pre', { class: 'lv-value', testid: 'store-value', text: JSON.stringify(res.value, null, 2) }),
        )
      } else {
        this.result.append(h('div', { class: 'lv-muted', text: `no value for ${JSON.stringify(key)} in ${store}${res && res.instance ? ` (asked ${res.instance})` : ''}` }))
      }
    } catch (err) {
      this.result.dataset.found = 'false'
      this.result.append(h('div', { class: 'lv-error', text: err.message }))
    } finally {
      this.button.disabled = false
    }
  }
}
