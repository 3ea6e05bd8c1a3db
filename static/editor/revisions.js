// The revision list (data-testid="revisions"): every saved revision of
// the design, newest first, each with "open" (load it into the editor,
// one undo step, to look at or to save again) and "restore" (save it as
// a new revision).

import { h, clear, formatDateTime } from './dom.js'
import { api, revisionNumber } from './api.js'

export class Revisions {
  // opts: designId, open(design, number), restore(design, number),
  // current() -> number of the revision the editor shows.
  constructor(el, opts) {
    this.el = el
    this.opts = opts
    this.list = []
    el.classList.add('be-revisions')
  }

  async refresh() {
    try {
      const list = await api('GET', `/api/designs/${encodeURIComponent(this.opts.designId)}/revisions`)
      this.list = (Array.isArray(list) ? list : []).slice().sort((a, b) => revisionNumber(b) - revisionNumber(a))
      this.error = null
    } catch (err) {
      this.error = err.message
    }
    this.render()
  }

  render() {
    const cur = this.opts.current()
    const ol = h('ol', { class: 'be-revision-list' })
    for (const r of this.list) {
      const n = revisionNumber(r)
      ol.append(
        h(
          'li',
          { class: 'be-revision' + (n === cur ? ' be-current' : ''), testid: `revision-${n}`, dataset: { current: n === cur ? 'true' : 'false' } },
          h('div', { class: 'be-revision-head' }, h('strong', { text: `#${n}` }), ' ', h('span', { class: 'be-hint', text: formatDateTime(r.saved) })),
          r.message ? h('div', { class: 'be-revision-msg', text: r.message }) : null,
          h(
            'div',
            { class: 'be-revision-actions' },
            h('button', { type: 'button', testid: `open-revision-${n}`, text: 'open', on: { click: () => this.load(n, false) } }),
            h('button', { type: 'button', testid: `restore-revision-${n}`, text: 'restore', on: { click: () => this.load(n, true) } }),
          ),
        ),
      )
    }
    clear(this.el).append(h('h2', { text: 'Revisions' }))
    if (this.error) this.el.append(h('p', { class: 'be-error', text: this.error }))
    this.el.append(ol)
  }

  async load(n, restore) {
    try {
      const res = await api('GET', `/api/designs/${encodeURIComponent(this.opts.designId)}/revisions/${n}`)
      if (restore) await this.opts.restore(res.design, n)
      else this.opts.open(res.design, n)
    } catch (err) {
      this.error = `Cannot load revision ${n}: ${err.message}`
      this.render()
    }
  }
}
