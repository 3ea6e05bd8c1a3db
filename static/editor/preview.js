// The preview panel: sample records per source topic (one JSON object a
// line), a generator of plausible samples, and the result of
// POST /api/preview: what each node emitted, the sink records, the
// windows that closed, late records, failed samples and stream time.

import { h, clear, show, formatTime, formatDateTime, json } from './dom.js'
import { api } from './api.js'
import { generateSamples, samplesText, parseSamples } from './samples.js'

export class Preview {
  // opts: designId, catalog, design() -> design, onProblems(problems),
  // selectNode(id), nodeLabel(id).
  constructor(el, opts) {
    this.el = el
    this.opts = opts
    this.texts = new Map()
    this.partitions = new Map()
    this.result = null
    el.classList.add('be-panel', 'be-preview')
  }

  storageKey(topic) {
    return `braid.samples.${this.opts.designId}.${topic}`
  }

  isOpen() {
    return !this.el.hidden
  }

  toggle(open = !this.isOpen()) {
    show(this.el, open)
    if (open) this.render()
    if (this.opts.badges) this.opts.badges(open && this.result ? counts(this.opts.design(), this.result) : null)
  }

  // sources are the design's source nodes, one per topic.
  sources() {
    const design = this.opts.design()
    const seen = new Set()
    const out = []
    for (const n of design.nodes) {
      if (n.kind !== 'source-stream' && n.kind !== 'source-table') continue
      const topic = (n.params && n.params.topic) || ''
      if (!topic || seen.has(topic)) continue
      seen.add(topic)
      out.push({ topic, node: n })
    }
    return { design, sources: out }
  }

  text(topic) {
    if (!this.texts.has(topic)) {
      let saved = ''
      try {
        saved = localStorage.getItem(this.storageKey(topic)) || ''
      } catch {
        // no storage
      }
      this.texts.set(topic, saved)
    }
    return this.texts.get(topic)
  }

  setText(topic, text) {
    this.texts.set(topic, text)
    try {
      localStorage.setItem(this.storageKey(topic), text)
    } catch {
      // no storage
    }
  }

  render() {
    const { design, sources } = this.sources()
    const head = h(
      'div',
      { class: 'be-panel-head' },
      h('h2', { text: 'Preview' }),
      h('span', { class: 'be-hint', text: 'Run the design on sample records, in the server, without a broker.' }),
      h('button', { type: 'button', class: 'be-close', testid: 'preview-close', title: 'close', text: '×', on: { click: () => this.toggle(false) } }),
    )
    const inputs = h('div', { class: 'be-samples' })
    if (sources.length === 0) inputs.append(h('p', { class: 'be-hint', text: 'The design has no source with a topic yet.' }))
    for (const { topic, node } of sources) {
      const ta = h('textarea', {
        testid: `samples-${topic}`,
        rows: '8',
        spellcheck: 'false',
        class: 'be-samples-text',
        placeholder: '{"key": "k1", "value": {"amount": 10}, "timestamp": 1700000000000}',
      })
      ta.value = this.text(topic)
      ta.addEventListener('input', () => this.setText(topic, ta.value))
      const parts = h('input', {
        type: 'number',
        min: '1',
        max: '64',
        testid: `partitions-${topic}`,
        value: String(this.partitions.get(topic) || 1),
        title: 'partitions of the topic',
        class: 'be-partitions',
      })
      parts.addEventListener('change', () => this.partitions.set(topic, Math.max(1, parseInt(parts.value, 10) || 1)))
      const gen = h('button', {
        type: 'button',
        testid: `generate-${topic}`,
        text: 'generate',
        on: {
          click: () => {
            ta.value = samplesText(generateSamples(this.opts.design(), node, this.opts.catalog))
            this.setText(topic, ta.value)
          },
        },
      })
      const clr = h('button', { type: 'button', testid: `clear-${topic}`, text: 'clear', on: { click: () => { ta.value = ''; this.setText(topic, '') } } })
      inputs.append(
        h(
          'div',
          { class: 'be-sample-topic', dataset: { topic } },
          h('div', { class: 'be-sample-head' }, h('strong', { text: topic }), h('span', { class: 'be-hint', text: ` (${node.kind === 'source-table' ? 'table' : 'stream'}, node ${node.id})` }), h('label', { class: 'be-inline' }, ' partitions ', parts), gen, clr),
          ta,
        ),
      )
    }
    const run = h('button', { type: 'button', class: 'be-primary', testid: 'run-preview', text: '▶ Run preview', on: { click: () => this.run() } })
    this.statusEl = h('span', { class: 'be-status', testid: 'preview-status' })
    this.resultEl = h('div', { class: 'be-preview-result', testid: 'preview-result' })
    clear(this.el).append(head, inputs, h('div', { class: 'be-row' }, run, this.statusEl), this.resultEl)
    if (this.result) this.renderResult(design, this.result)
  }

  async run() {
    const { design, sources } = this.sources()
    const samples = []
    const problems = []
    for (const { topic } of sources) {
      const { records, errors } = parseSamples(this.text(topic))
      for (const e of errors) problems.push(`${topic} line ${e.line}: ${e.message}`)
      for (const r of records) samples.push({ topic, ...r })
    }
    if (problems.length) {
      this.statusEl.textContent = 'Samples are not valid: ' + problems.join('; ')
      this.statusEl.className = 'be-status be-bad'
      return
    }
    const partitions = {}
    for (const { topic } of sources) {
      const n = this.partitions.get(topic) || 1
      if (n > 1) partitions[topic] = n
    }
    this.statusEl.textContent = `Running on ${samples.length} sample(s)…`
    this.statusEl.className = 'be-status'
    try {
      const res = await api('POST', '/api/preview', { design, samples, partitions })
      this.result = res || {}
      this.opts.badges && this.opts.badges(counts(design, this.result))
      this.statusEl.textContent = `Ran ${samples.length} sample(s).`
      this.statusEl.className = 'be-status be-ok'
      this.renderResult(design, this.result)
    } catch (err) {
      this.result = null
      clear(this.resultEl)
      this.statusEl.textContent = `Preview failed: ${err.message}`
      this.statusEl.className = 'be-status be-bad'
      if (err.problems.length) {
        this.opts.onProblems(err.problems)
        this.statusEl.textContent = `The design has ${err.problems.length} problem(s); see Problems.`
      }
    }
  }

  renderResult(design, res) {
    const out = clear(this.resultEl)
    const nodes = res.nodes || {}
    const sinks = res.sinks || {}
    if (res.truncated) out.append(h('p', { class: 'be-error', text: 'Some results were cut short (too many records).' }))

    // Windows that closed, late records, errors, stream time.
    const wins = res.windows || []
    out.append(
      h('h3', { text: `Closed windows (${wins.length})` }),
      table(
        'preview-windows',
        ['node', 'store', 'task', 'start', 'end', 'closes at', 'stream time', 'keys', 'emitted'],
        wins.map((w, i) => ({
          testid: `window-closed-${i}`,
          cells: [w.node, w.store, w.task, time(w.start), time(w.end), time(w.closesAt), time(w.streamTime), w.keys, w.emitted ? 'yes' : 'no'],
          onclick: w.node ? () => this.opts.selectNode(w.node) : null,
        })),
        'No window closed.',
      ),
    )
    const late = res.late || []
    if (late.length) {
      out.append(
        h('h3', { text: `Late records dropped (${late.length})` }),
        table(
          'preview-late',
          ['sample', 'node', 'store', 'timestamp', 'stream time', 'window'],
          late.map((l, i) => ({
            testid: `late-${i}`,
            cells: [l.sample + 1, l.node, l.store, time(l.timestamp), time(l.streamTime), `${time(l.windowStart)}–${time(l.windowEnd)}`],
          })),
        ),
      )
    }
    const errors = res.errors || []
    if (errors.length) {
      out.append(
        h('h3', { text: `Failed samples (${errors.length})` }),
        table(
          'preview-errors',
          ['sample', 'node', 'error'],
          errors.map((e, i) => ({ testid: `preview-error-${i}`, cells: [e.sample + 1, e.node || '', e.message], onclick: e.node ? () => this.opts.selectNode(e.node) : null })),
        ),
      )
    }
    const st = Object.entries(res.streamTime || {})
    if (st.length) {
      out.append(h('p', { class: 'be-hint', testid: 'preview-stream-time', text: 'Stream time at the end: ' + st.map(([t, ms]) => `task ${t} ${time(ms).text}`).join(', ') }))
    }

    // Sinks.
    const sinkTopics = Object.keys(sinks)
    out.append(h('h3', { text: 'Sink records' }))
    if (!sinkTopics.length) out.append(h('p', { class: 'be-hint', text: 'Nothing was written to a sink.' }))
    for (const topic of sinkTopics) {
      out.append(h('section', { class: 'be-preview-sink', testid: `preview-sink-${topic}` }, h('h4', { text: `${topic} (${sinks[topic].length})` }), records(sinks[topic])))
    }

    // Per node.
    out.append(h('h3', { text: 'Per node' }))
    for (const n of design.nodes) {
      const ports = nodes[n.id] || {}
      let total = Object.values(ports).reduce((s, rs) => s + rs.length, 0)
      if (n.kind === 'sink' && n.params && sinks[n.params.topic]) total = sinks[n.params.topic].length
      const sec = h(
        'section',
        { class: 'be-preview-node', testid: `preview-node-${n.id}`, dataset: { node: n.id } },
        h('h4', { on: { click: () => this.opts.selectNode(n.id) } }, this.opts.nodeLabel(n.id), h('span', { class: 'be-hint', text: ` ${total} record(s)` })),
      )
      const names = Object.keys(ports)
      if (n.kind === 'sink' && n.params && sinks[n.params.topic]) {
        sec.append(h('div', { class: 'be-hint', text: `wrote ${sinks[n.params.topic].length} record(s) to ${n.params.topic}` }))
      } else if (!names.length) {
        sec.append(h('div', { class: 'be-hint', text: 'no records' }))
      }
      for (const port of names) {
        if (names.length > 1 || port !== 'out') sec.append(h('div', { class: 'be-port-name', text: `port ${port}` }))
        sec.append(records(ports[port]))
      }
      out.append(sec)
    }
  }

  // focusNode shows a node's records (a click on the canvas).
  focusNode(id) {
    if (!this.isOpen() || !this.resultEl) return
    const sec = this.resultEl.querySelector(`[data-testid="preview-node-${CSS.escape(id)}"]`)
    for (const s of this.resultEl.querySelectorAll('.be-preview-node.be-focus')) s.classList.remove('be-focus')
    if (sec) {
      sec.classList.add('be-focus')
      sec.scrollIntoView({ block: 'nearest' })
    }
  }
}

// counts are the records each node emitted (a sink: wrote).
function counts(design, res) {
  const out = {}
  for (const n of design.nodes) {
    const ports = (res.nodes && res.nodes[n.id]) || {}
    let c = Object.values(ports).reduce((s, rs) => s + rs.length, 0)
    if (n.kind === 'sink' && n.params && res.sinks && res.sinks[n.params.topic]) c = res.sinks[n.params.topic].length
    out[n.id] = c
  }
  return out
}

function time(ms) {
  return { text: formatTime(ms), title: `${formatDateTime(ms)} (${ms})` }
}

function cell(v) {
  if (v && typeof v === 'object' && 'text' in v) return h('td', { title: v.title || '', text: v.text })
  return h('td', { text: v === undefined || v === null ? '' : String(v) })
}

function table(testid, headers, rows, empty) {
  const t = h('table', { class: 'be-table', testid }, h('thead', {}, h('tr', {}, headers.map((x) => h('th', { text: x })))))
  const body = h('tbody')
  for (const r of rows) {
    const tr = h('tr', { testid: r.testid }, r.cells.map(cell))
    if (r.onclick) {
      tr.classList.add('be-clickable')
      tr.addEventListener('click', r.onclick)
    }
    body.append(tr)
  }
  if (!rows.length && empty) body.append(h('tr', {}, h('td', { colspan: String(headers.length), class: 'be-hint', text: empty })))
  t.append(body)
  return t
}

function records(rs) {
  const hasOld = rs.some((r) => r.old !== undefined && r.old !== null)
  const headers = ['#', 'key', 'value', 'timestamp']
  if (hasOld) headers.push('old')
  return table(
    null,
    headers,
    rs.map((r, i) => {
      const cells = [i + 1, json(r.key), json(r.value), time(r.timestamp)]
      if (hasOld) cells.push(json(r.old))
      return { cells }
    }),
  )
}
