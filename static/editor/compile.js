// The compile view: POST /api/compile, then the sub-topologies drawn as
// boxes of their nodes (in flow order, with the edges between them), the
// internal topics and stores, and the describe() text.

import { h, clear, show, formatDuration } from './dom.js'
import { api } from './api.js'

export class CompileView {
  // opts: design() -> design, onProblems(problems), highlight(ids),
  // selectNode(id), nodeLabel(id).
  constructor(el, opts) {
    this.el = el
    this.opts = opts
    el.classList.add('be-panel', 'be-compile')
  }

  isOpen() {
    return !this.el.hidden
  }

  close() {
    show(this.el, false)
    this.opts.highlight([])
  }

  // open compiles the current design and shows the result.
  async open() {
    show(this.el, true)
    const design = this.opts.design()
    const body = h('div', { class: 'be-compile-body', testid: 'compile-body' }, h('p', { class: 'be-hint', text: 'Compiling…' }))
    clear(this.el).append(this.head(), body)
    try {
      const res = await api('POST', '/api/compile', design)
      this.render(body, design, res || {})
    } catch (err) {
      clear(body).append(h('p', { class: 'be-error', testid: 'compile-error', text: `The design does not compile: ${err.message}` }))
      if (err.problems.length) {
        body.append(h('ul', { class: 'be-problem-list' }, err.problems.map((p) => h('li', { text: `${p.node || 'design'}${p.param ? ' ' + p.param : ''}: ${p.message}` }))))
        this.opts.onProblems(err.problems)
      }
    }
  }

  head() {
    return h(
      'div',
      { class: 'be-panel-head' },
      h('h2', { text: 'Compiled topology' }),
      h('button', { type: 'button', testid: 'compile-refresh', text: 'recompile', on: { click: () => this.open() } }),
      h('button', { type: 'button', class: 'be-close', testid: 'compile-close', title: 'close', text: '×', on: { click: () => this.close() } }),
    )
  }

  render(body, design, res) {
    clear(body)
    const subs = res.subtopologies || []
    const byId = new Map(design.nodes.map((n) => [n.id, n]))
    const groups = h('div', { class: 'be-subtopologies', testid: 'subtopologies' })
    for (const st of subs) {
      const ids = (st.nodes || []).filter((id) => byId.has(id))
      const set = new Set(ids)
      const box = h(
        'section',
        {
          class: 'be-subtopology',
          testid: `subtopology-${st.id}`,
          dataset: { nodes: ids.join(' ') },
          on: {
            mouseenter: () => this.opts.highlight(ids),
            mouseleave: () => this.opts.highlight([]),
          },
        },
        h('h3', { text: `Sub-topology ${st.id}` }),
      )
      const chain = h('ol', { class: 'be-subtopology-nodes' })
      for (const id of flowOrder(ids, design.edges)) {
        const n = byId.get(id)
        const next = design.edges.filter((e) => e.from === id && set.has(e.to)).map((e) => e.to)
        chain.append(
          h(
            'li',
            { class: 'be-chip', testid: `compile-node-${st.id}-${id}`, title: next.length ? `→ ${next.join(', ')}` : '', on: { click: () => this.opts.selectNode(id) } },
            h('span', { class: 'be-chip-kind', text: n.kind }),
            h('span', { class: 'be-chip-name', text: this.opts.nodeLabel(id) }),
            next.length ? h('span', { class: 'be-chip-next', text: '→ ' + next.map((t) => this.opts.nodeLabel(t)).join(', ') }) : null,
            operatorOf(res, id) ? h('span', { class: 'be-chip-op', text: operatorOf(res, id) }) : null,
          ),
        )
      }
      box.append(chain)
      groups.append(box)
    }
    if (!subs.length) groups.append(h('p', { class: 'be-hint', text: 'No sub-topologies.' }))

    const topics = res.topics || []
    const stores = res.stores || []
    const f = (o, k) => (o[k] !== undefined ? o[k] : o[k.charAt(0).toLowerCase() + k.slice(1)])
    const topicTable = table(
      'compile-topics',
      ['topic', 'kind', 'partitions', 'cleanup policy', 'retention', 'store'],
      topics.map((t) => [
        f(t, 'Name'),
        f(t, 'Kind'),
        f(t, 'Partitions') || (f(t, 'PartitionsOf') && f(t, 'PartitionsOf').length ? `as ${f(t, 'PartitionsOf').join(', ')}` : 'from input'),
        f(t, 'CleanupPolicy'),
        f(t, 'Retention') ? formatDuration(f(t, 'Retention')) : '',
        f(t, 'Store') || '',
      ]),
      'No internal topics.',
    )
    const storeTable = table(
      'compile-stores',
      ['store', 'node', 'type', 'processor', 'sub-topology', 'logged', 'cached', 'retention', 'grace', 'emit'],
      stores.map((s) => [
        f(s, 'Name'),
        f(s, 'Node') || '',
        f(s, 'Type'),
        f(s, 'Processor'),
        f(s, 'Subtopology'),
        f(s, 'Logged') ? 'yes' : 'no',
        f(s, 'Cached') ? 'yes' : 'no',
        f(s, 'Retention') ? formatDuration(f(s, 'Retention')) : '',
        f(s, 'Type') === 'key-value' ? '' : formatDuration(f(s, 'Grace') || 0),
        f(s, 'Type') === 'key-value' ? '' : f(s, 'Emit') || (f(s, 'EmitOnClose') ? 'on-window-close' : 'on-window-update'),
      ]),
      'No state stores.',
    )
    body.append(
      res.appId ? h('p', { class: 'be-hint', testid: 'compile-app-id', text: `application id ${res.appId}: internal topics are named <app id>-<name>-repartition and -changelog` }) : null,
      groups,
      h('div', { class: 'be-compile-tables' }, h('section', {}, h('h3', { text: 'Internal topics' }), topicTable), h('section', {}, h('h3', { text: 'State stores' }), storeTable)),
      h('h3', { text: 'describe()' }),
      h('pre', { class: 'be-describe', testid: 'describe', text: res.describe || '' }),
    )
  }
}

// operatorOf is the name of the operator a node became (the server's
// compile answer has it per node), '' when unknown.
function operatorOf(res, id) {
  const n = res.nodes && res.nodes[id]
  return (n && (n.operator || n.Operator)) || ''
}

// flowOrder sorts node ids so that each comes after the nodes feeding it
// (ties in the given order).
function flowOrder(ids, edges) {
  const set = new Set(ids)
  const indeg = new Map(ids.map((id) => [id, 0]))
  for (const e of edges) if (set.has(e.from) && set.has(e.to)) indeg.set(e.to, indeg.get(e.to) + 1)
  const out = []
  const ready = ids.filter((id) => indeg.get(id) === 0)
  while (ready.length) {
    const id = ready.shift()
    out.push(id)
    for (const e of edges) {
      if (e.from === id && set.has(e.to)) {
        indeg.set(e.to, indeg.get(e.to) - 1)
        if (indeg.get(e.to) === 0) ready.push(e.to)
      }
    }
  }
  for (const id of ids) if (!out.includes(id)) out.push(id)
  return out
}

function table(testid, headers, rows, empty) {
  const t = h('table', { class: 'be-table', testid }, h('thead', {}, h('tr', {}, headers.map((x) => h('th', { text: x })))))
  const body = h('tbody')
  rows.forEach((r) => body.append(h('tr', {}, r.map((v) => h('td', { text: v === undefined || v === null ? '' : String(v) })))))
  if (!rows.length) body.append(h('tr', {}, h('td', { colspan: String(headers.length), class: 'be-hint', text: empty })))
  t.append(body)
  return t
}
