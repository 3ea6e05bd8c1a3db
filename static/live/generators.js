// Generators: per source topic of the deployment, a form (rate, keys,
// template fields as "name = generator" lines, jitter, late fraction) to
// start, change or stop a record generator, and what the running one has
// done (produced, late, achieved rate) from the deployment's Info.
//
// Field generators: key, sequence, random(1, 500), randfloat(1, 9),
// choice(gold, silver), timestamp, bool, 'literal', numbers.
//
// Test ids: generator-<topic> (data-running), generator-start-<topic>,
// generator-stop-<topic>, generator-stats-<topic>.

import { h } from '../editor/dom.js'
import { api } from '../editor/api.js'
import { rate, count } from './format.js'

const DEFAULT_TEMPLATE = { id: 'sequence', value: 'random(1, 100)', ts: 'timestamp' }

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
      jitter: num('jitterMs', g ? g.jitterMs || 0 : 0, { min: '0', step: '100' }),
      late: num('lateFraction', g ? g.lateFraction || 0 : 0, { min: '0', max: '1', step: '0.01' }),
      template: h('textarea', { rows: '4', spellcheck: 'false', 'aria-label': 'template', class: 'lv-template' }),
      stats: h('div', { class: 'lv-generator-stats', testid: `generator-stats-${topic}` }),
      start: h('button', { type: 'submit', class: 'lv-button lv-primary', testid: `generator-start-${topic}`, text: 'Start' }),
      stop: h('button', { type: 'button', class: 'lv-button', testid: `generator-stop-${topic}`, text: 'Stop' }),
      edited: false,
    }
    f.template.value = formatTemplate(g ? g.template : DEFAULT_TEMPLATE)
    const form = h(
      'form',
      { class: 'lv-generator', testid: `generator-${topic}`, dataset: { topic } },
      h('div', { class: 'lv-generator-head' }, h('strong', { text: topic }), f.stats),
      h(
        'div',
        { class: 'lv-generator-fields' },
        h('label', {}, 'records/s ', f.rate),
        h('label', {}, 'keys ', f.keys),
        h('label', {}, 'jitter ms ', f.jitter),
        h('label', {}, 'late fraction ', f.late),
      ),
      h('label', { class: 'lv-template-label' }, 'template (name = generator, one a line)', f.template),
      h('div', { class: 'lv-row' }, f.start, f.stop),
    )
    form.addEventListener('input', () => (f.edited = true))
    form.addEventListener('submit', (e) => {
      e.preventDefault()
      this.start(topic, f)
    })
    f.stop.addEventListener('click', () => this.stop(topic, f))
    f.el = form
    return f
  }

  fill(f, g) {
    f.el.dataset.running = g ? 'true' : 'false'
    f.start.textContent = g ? 'Update' : 'Start'
    f.stop.disabled = !g
    f.stats.textContent = g ? `running: ${count(g.produced || 0)} produced · ${count(g.late || 0)} late · ${rate(g.achievedRate)}/s achieved of ${rate(g.rate)}/s` : 'stopped'
    if (g && !f.edited) {
      f.rate.value = String(g.rate)
      f.keys.value = String(g.keys)
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
    f.start.disabled = true
    try {
      await api('POST', `/api/deployments/${encodeURIComponent(this.deployment)}/generators`, body)
      f.edited = false
      this.opts.status(`generator on ${topic}: ${body.rate} records/s`, 'ok')
      await this.opts.refresh()
    } catch (err) {
      this.opts.status(`generator on ${topic}: ${err.message}`, 'error')
    } finally {
      f.start.disabled = false
    }
  }

  async stop(topic, f) {
    f.stop.disabled = true
    try {
      await api('DELETE', `/api/deployments/${encodeURIComponent(this.deployment)}/generators/${encodeURIComponent(topic)}`)
      this.opts.status(`generator on ${topic} stopped`, 'ok')
      await this.opts.refresh()
    } catch (err) {
      this.opts.status(`stopping the generator on ${topic}: ${err.message}`, 'error')
      f.stop.disabled = false
    }
  }
}
