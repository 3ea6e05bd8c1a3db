// Validation while editing: after a change (debounced) the design goes to
// POST /api/validate; nodes with problems are marked on the canvas and
// the problems are listed (data-testid="problems"); clicking one selects
// its node and focuses the parameter.

import { h, clear, debounce } from './dom.js'
import { api } from './api.js'

export class Problems {
  // opts: design() -> the design to check, onProblems(problems),
  // select(problem).
  constructor(el, opts) {
    this.el = el
    this.opts = opts
    this.problems = []
    this.seq = 0
    this.lastChecked = null
    el.classList.add('be-problems')
    this.schedule = debounce(() => this.check(), 400)
    this.render()
  }

  // check validates the design now (unless it is the one last checked).
  async check(force = false) {
    const design = this.opts.design()
    // Positions do not matter to validation.
    const key = JSON.stringify({ ...design, nodes: design.nodes.map(({ position, ...n }) => n) })
    if (!force && key === this.lastChecked) return
    this.lastChecked = key
    const seq = ++this.seq
    this.el.classList.add('be-busy')
    try {
      const res = await api('POST', '/api/validate', design)
      if (seq !== this.seq) return
      this.set((res && res.problems) || [])
      this.error = null
    } catch (err) {
      if (seq !== this.seq) return
      if (err.problems && err.problems.length) this.set(err.problems)
      else {
        this.error = err.message
        this.render()
      }
      this.lastChecked = null
    } finally {
      if (seq === this.seq) this.el.classList.remove('be-busy')
    }
  }

  // set shows problems (also those a compile or preview returned).
  set(problems) {
    this.problems = problems || []
    this.render()
    this.opts.onProblems(this.problems)
  }

  render() {
    const n = this.problems.length
    const head = h(
      'h2',
      {},
      'Problems ',
      h('span', { class: 'be-count' + (n ? ' be-bad' : ' be-ok'), testid: 'problems-count', text: String(n) }),
    )
    const list = h('ol', { class: 'be-problem-list' })
    this.problems.forEach((p, i) => {
      const where = p.node ? `${p.node}${p.kind ? ` (${p.kind})` : ''}` : 'design'
      const li = h(
        'li',
        {
          class: 'be-problem',
          testid: `problem-${i}`,
          tabindex: '0',
          role: 'button',
          dataset: { node: p.node || '', param: p.param || '' },
          on: {
            click: () => this.opts.select(p),
            keydown: (e) => {
              if (e.key === 'Enter') this.opts.select(p)
            },
          },
        },
        h('span', { class: 'be-problem-where', text: where }),
        p.param ? h('span', { class: 'be-problem-param', text: p.param }) : null,
        h('span', { class: 'be-problem-msg', text: p.message }),
      )
      list.append(li)
    })
    clear(this.el).append(head)
    if (this.error) this.el.append(h('p', { class: 'be-error', text: `Validation failed: ${this.error}` }))
    else if (n === 0) this.el.append(h('p', { class: 'be-hint', testid: 'no-problems', text: 'No problems.' }))
    this.el.append(list)
  }
}
