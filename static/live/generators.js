// Generators: per source topic of the deployment, what the topic holds
// (a sample of its latest records, GET .../generators/:topic/sample), a
// template proposed from them, a plain warning when another producer
// feeds the topic (its records lack the braid-generator header), and a
// form (rate, keys, key prefix, template fields as "name = generator"
// lines, jitter, late fraction) to start, change or stop a record
// generator, with what the running one has done (produced, late,
// achieved rate) from the deployment's Info. On a topic another producer
// feeds, Start needs the confirmation box ticked (the server answers 409
// without it). The form takes the proposed template for a topic that
// holds records, and the default one only for an empty topic.
//
// Field generators: key, sequence, random(1, 500), randfloat(1, 9),
// choice(gold, silver), timestamp, bool, 'literal', numbers.
//
// Test ids: generator-<topic> (data-running), generator-start-<topic>,
// generator-stop-<topic>, generator-stats-<topic>,
// generator-template-<topic>, generator-sample-<topic> (data-records,
// data-external, once read), generator-proposal-<topic>,
// generator-use-proposal-<topic>, generator-external-<topic> (shown when
// another producer feeds the topic), generator-confirm-<topic> (its
// checkbox), generator-sample-refresh-<topic>.

import { h } from '../editor/dom.js'
import { api } from '../editor/api.js'
import { rate, count, clock } from './format.js'
import { gate } from './replay.js'

const DEFAULT_TEMPLATE = { id: 'sequence', value: 'random(1, 100)', ts: 'timestamp' }
// SHOWN_RECORDS is how many of the sampled records the panel lists,
// newest first.
const SHOWN_RECORDS = 5

// parseTemplate reads "name = generator" lines (blank lines and lines
// starting with # skipped).
export function parseTemplate(text) {
  const out = {}
  const lines = String(text).split('\n')
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim()
    if (!line || line.startsWith('#')) continue
    const eq = line.indexOf('=')
    if (eq <= 0) throw new Error(`template line ${i + 1}: write name = generator`)
    out[line.slice(0, eq).trim()] = line.slice(eq + 1).trim()
  }
  return out
}

export function formatTemplate(tpl) {
  return Object.entries(tpl || {})
    .map(([k, v]) => `${k} = ${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join('\n')
}

export class Generators {
  // opts: status(message, kind), refresh() to re-read the Info.
  constructor(root, deployment, opts) {
    this.root = root
    this.deployment = deployment
    this.opts = opts
    this.forms = new Map()
    this.empty = h('p', { class: 'lv-muted', text: 'The deployment reads no topic.' })
    this.list = h('div', { class: 'lv-generator-list' })
    root.append(h('p', { class: 'lv-hint', text: "Fields: key, sequence, random(1, 500), randfloat(1, 9), choice(gold, silver), timestamp, bool, 'literal', numbers." }), this.empty, this.list)
  }

  // update shows the Info's source topics and generators.
  update(info) {
    const topics = (info && info.sourceTopics) || []
    const running = new Map(((info && info.generators) || []).map((g) => [g.topic, g]))
    this.empty.hidden = topics.length > 0
    for (const topic of topics) {
      let f = this.forms.get(topic)
      if (!f) {
        f = this.makeForm(topic, running.get(topic))
        this.forms.set(topic, f)
        this.list.append(f.el)
      }
      this.fill(f, running.get(topic))
    }
    for (const [topic, f] of this.forms) {
      if (!topics.includes(topic)) {
        f.el.remove()
        this.forms.delete(topic)
      }
    }
  }

  makeForm(topic, g) {
    const num = (name, value, attrs = {}) => h('input', { type: 'number', name, value: String(value), class: 'lv-num-input', 'aria-label': name, ...attrs })
    const f = {
      rate: num('rate', g ? g.rate : 50, { min: '0', step: '1' }),
      keys: num('keys', g ? g.keys : 20, { min: '1', step: '1' }),
      keyPrefix: h('input', { type: 'text', name: 'keyPrefix', value: (g && g.keyPrefix) || '', placeholder: 'key', class: 'lv-text-input', 'aria-label': 'keyPrefix' }),
      jitter: num('jitterMs', g ? g.jitterMs || 0 : 0, { min: '0', step: '100' }),
      late: num('lateFraction', g ? g.lateFraction || 0 : 0, { min: '0', max: '1', step: '0.01' }),
      template: h('textarea', { rows: '4', spellcheck: 'false', 'aria-label': 'template', class: 'lv-template', testid: `generator-template-${topic}` }),
      stats: h('div', { class: 'lv-generator-stats', testid: `generator-stats-${topic}` }),
      sample: h('div', { class: 'lv-generator-sample', testid: `generator-sample-${topic}` }, h('p', { class: 'lv-muted', text: `reading the latest records of ${topic}…` })),
      proposal: h('div', { class: 'lv-generator-proposal', testid: `generator-proposal-${topic}`, hidden: true }),
      confirm: h('input', { type: 'checkbox', testid: `generator-confirm-${topic}` }),
      start: h('button', { type: 'submit', class: 'lv-button lv-primary', testid: `generator-start-${topic}`, text: 'Start' }),
      stop: h('button', { type: 'button', class: 'lv-button', testid: `generator-stop-${topic}`, text: 'Stop' }),
      refresh: h('button', { type: 'button', class: 'lv-button', testid: `generator-sample-refresh-${topic}`, text: 'Read the topic again' }),
      edited: false,
    }
    f.external = h(
      'div',
      { class: 'lv-generator-external', testid: `generator-external-${topic}`, role: 'alert', hidden: true },
      h('p', { class: 'lv-external-text' }),
      h('label', {}, f.confirm, ' write generated records into this topic anyway'),
    )
    if (g) f.template.value = formatTemplate(g.template)
    const form = h(
      'form',
      { class: 'lv-generator', testid: `generator-${topic}`, dataset: { topic } },
      h('div', { class: 'lv-generator-head' }, h('strong', { text: topic }), f.stats),
      f.sample,
      f.proposal,
      f.external,
      h(
        'div',
        { class: 'lv-generator-fields' },
        h('label', {}, 'records/s ', f.rate),
        h('label', {}, 'keys ', f.keys),
        h('label', {}, 'key prefix ', f.keyPrefix),
        h('label', {}, 'jitter ms ', f.jitter),
        h('label', {}, 'late fraction ', f.late),
      ),
      h('label', { class: 'lv-template-label' }, 'template (name = generator, one a line)', f.template),
      h('div', { class: 'lv-row' }, f.start, f.stop, f.refresh),
    )
    form.addEventListener('input', (e) => {
      if (e.target !== f.confirm) f.edited = true
    })
    form.addEventListener('submit', (e) => {
      e.preventDefault()
      this.start(topic, f)
    })
    f.stop.addEventListener('click', () => this.stop(topic, f))
    f.refresh.addEventListener('click', () => this.readSample(topic, f))
    f.el = form
    gate(f.start)
    this.readSample(topic, f)
    return f
  }

  // readSample reads what the topic holds and shows it: its latest
  // records, the template proposed from them (which the form takes while
  // no generator runs and nothing was edited) and whether another
  // producer feeds it.
  async readSample(topic, f) {
    let s
    try {
      s = await api('GET', `/api/deployments/${encodeURIComponent(this.deployment)}/generators/${encodeURIComponent(topic)}/sample`)
    } catch (err) {
      f.sample.replaceChildren(h('p', { class: 'lv-error', text: `reading ${topic}: ${err.message}` }))
      return
    }
    const records = s.records || []
    f.sample.dataset.records = String(records.length)
    f.sample.dataset.external = String(s.external || 0)
    f.sample.replaceChildren(...sampleView(topic, records))
    const p = s.proposal || { template: {}, notes: [] }
    const hasTemplate = Object.keys(p.template || {}).length > 0
    f.proposal.hidden = records.length === 0
    if (records.length > 0) {
      const use = h('button', { type: 'button', class: 'lv-button', testid: `generator-use-proposal-${topic}`, text: 'Use it', disabled: !hasTemplate })
      use.addEventListener('click', () => this.useProposal(f, p))
      const facts = [p.keys ? `${p.keys} keys${p.keyPrefix ? ` (${p.keyPrefix}-0…)` : ''}` : '', p.rate ? `about ${rate(p.rate)} records/s` : ''].filter(Boolean).join(' · ')
      f.proposal.replaceChildren(
        h('div', { class: 'lv-generator-head' }, h('span', { text: 'Template proposed from these records' + (facts ? ` — ${facts}` : '') }), use),
        h('pre', { class: 'lv-proposal-template', text: hasTemplate ? formatTemplate(p.template) : 'no field to propose' }),
        ...(p.notes || []).map((n) => h('p', { class: 'lv-hint', text: n })),
      )
    }
    const running = f.el.dataset.running === 'true'
    if (!running && !f.edited) {
      if (records.length > 0 && hasTemplate) this.useProposal(f, p, false)
      else if (records.length === 0 && !f.template.value) f.template.value = formatTemplate(DEFAULT_TEMPLATE)
    }
    const external = s.external || 0
    f.external.hidden = external === 0
    f.el.dataset.external = String(external)
    if (external > 0) {
      f.external.querySelector('.lv-external-text').textContent =
        `Another producer feeds ${topic}: ${external} of its latest ${records.length} records were not written by Braid's generator. ` +
        "A generator would mix records of its own template with that producer's; start one only if that is what you want."
    } else {
      f.confirm.checked = false
    }
  }

  // useProposal puts a proposal in the form: its template, keys, key
  // prefix and rate (rounded, at least 1).
  useProposal(f, p, edited = true) {
    f.template.value = formatTemplate(p.template)
    if (p.keys) f.keys.value = String(p.keys)
    f.keyPrefix.value = p.keyPrefix || ''
    if (p.rate) f.rate.value = String(Math.max(1, Math.round(p.rate)))
    f.edited = edited
  }

  fill(f, g) {
    f.el.dataset.running = g ? 'true' : 'false'
    f.start.textContent = g ? 'Update' : 'Start'
    gate(f.stop, !!g)
    f.stats.textContent = g ? `running: ${count(g.produced || 0)} produced · ${count(g.late || 0)} late · ${rate(g.achievedRate)}/s achieved of ${rate(g.rate)}/s` : 'stopped'
    if (g && !f.edited) {
      f.rate.value = String(g.rate)
      f.keys.value = String(g.keys)
      f.keyPrefix.value = g.keyPrefix || ''
      f.jitter.value = String(g.jitterMs || 0)
      f.late.value = String(g.lateFraction || 0)
      const tpl = formatTemplate(g.template)
      if (document.activeElement !== f.template && tpl) f.template.value = tpl
    }
  }

  async start(topic, f) {
    let template
    try {
      template = parseTemplate(f.template.value)
    } catch (err) {
      this.opts.status(err.message, 'error')
      return
    }
    const body = {
      topic,
      rate: Number(f.rate.value),
      keys: Number(f.keys.value),
      template,
      jitterMs: Number(f.jitter.value) || 0,
      lateFraction: Number(f.late.value) || 0,
    }
    if (f.keyPrefix.value.trim()) body.keyPrefix = f.keyPrefix.value.trim()
    if (f.confirm.checked) body.confirmExternal = true
    gate(f.start, false)
    try {
      await api('POST', `/api/deployments/${encodeURIComponent(this.deployment)}/generators`, body)
      f.edited = false
      this.opts.status(`generator on ${topic}: ${body.rate} records/s`, 'ok')
      await this.opts.refresh()
    } catch (err) {
      this.opts.status(`generator on ${topic}: ${err.message}`, 'error')
      // Another producer feeds it: show what the topic holds now and
      // the box that confirms.
      if (err.status === 409) await this.readSample(topic, f)
    } finally {
      gate(f.start, true)
    }
  }

  async stop(topic, f) {
    gate(f.stop, false)
    try {
      await api('DELETE', `/api/deployments/${encodeURIComponent(this.deployment)}/generators/${encodeURIComponent(topic)}`)
      this.opts.status(`generator on ${topic} stopped`, 'ok')
      await this.opts.refresh()
    } catch (err) {
      this.opts.status(`stopping the generator on ${topic}: ${err.message}`, 'error')
      gate(f.stop, true)
    }
  }
}

// sampleView lists a topic's latest records, newest first, each with
// where it is, when, its key and value, and who wrote it.
function sampleView(topic, records) {
  if (records.length === 0) return [h('p', { class: 'lv-muted', text: `${topic} holds no record yet: the template below is only a starting point.` })]
  const shown = records.slice(-SHOWN_RECORDS).reverse()
  const cell = (text, cls) => h('td', { class: cls, text, title: text })
  return [
    h('div', { class: 'lv-hint', text: `Latest records of ${topic} (${shown.length} of the ${records.length} read, newest first)` }),
    h(
      'table',
      { class: 'lv-sample-table' },
      h('thead', {}, h('tr', {}, ['p/offset', 'time', 'key', 'value', 'written by'].map((c) => h('th', { text: c })))),
      h(
        'tbody',
        {},
        shown.map((r) => {
          const ours = (r.headers || []).some((x) => x.key === 'braid-generator')
          return h(
            'tr',
            { dataset: { external: String(!ours) } },
            cell(`${r.partition}/${r.offset}`),
            cell(clock(r.timestamp, { millis: false })),
            cell(r.key, 'lv-mono'),
            cell(r.value.length > 120 ? r.value.slice(0, 119) + '…' : r.value, 'lv-mono'),
            cell(ours ? 'generator' : 'another producer'),
          )
        }),
      ),
    ),
  ]
}
