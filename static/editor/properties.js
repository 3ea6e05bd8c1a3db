// The property panel: a form generated from the selected node's kind,
// one field per parameter (data-testid="param-<name>"), with live syntax
// checks of expressions (POST /api/expression) and the node's problems
// beside the fields they are about.

import { h, clear, debounce } from './dom.js'
import { api } from './api.js'
import { branchesOf } from './catalog.js'
import { clone } from './graph.js'

const DURATION = /^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$|^0$/

export class Properties {
  // opts: catalog, canvas, status(msg, kind), topics() -> known topic names.
  constructor(el, opts) {
    this.el = el
    this.opts = opts
    this.catalog = opts.catalog
    this.canvas = opts.canvas
    this.nodeId = null
    this.problems = []
    this.applying = false
    el.classList.add('be-properties')
    this.renderEmpty()
  }

  // show renders the form for the selection.
  show(cells) {
    const nodes = cells.filter((c) => c.isNode())
    if (cells.length === 1 && nodes.length === 1) {
      this.renderNode(nodes[0].id)
    } else if (cells.length === 1) {
      this.renderEdge(cells[0])
    } else if (cells.length > 1) {
      this.nodeId = null
      clear(this.el).append(
        h('h2', { text: 'Selection' }),
        h('p', { text: `${nodes.length} node(s) and ${cells.length - nodes.length} edge(s) selected.` }),
        h('button', { type: 'button', testid: 'delete-selection', text: 'Delete', on: { click: () => this.canvas.removeSelected() } }),
      )
    } else {
      this.renderEmpty()
    }
  }

  // refresh re-renders after a change the form did not make (undo,
  // paste, a revision opened), unless a field of it has the focus and
  // the node is the same.
  refresh() {
    if (this.applying) return
    if (this.nodeId) {
      if (!this.canvas.node(this.nodeId)) {
        this.renderEmpty()
        return
      }
      const data = this.canvas.nodeData(this.nodeId)
      if (JSON.stringify(data) === this.renderedData) return
      this.renderNode(this.nodeId)
    }
  }

  renderEmpty() {
    this.nodeId = null
    clear(this.el).append(
      h('h2', { text: 'Properties' }),
      h('p', { class: 'be-hint', text: 'Select a node to edit its parameters. Drag operators from the palette onto the canvas; connect an output (right) to an input (left).' }),
      h(
        'ul',
        { class: 'be-hint be-keys' },
        h('li', { text: 'Ctrl+Z / Ctrl+Shift+Z: undo / redo' }),
        h('li', { text: 'Ctrl+C / Ctrl+V: copy / paste' }),
        h('li', { text: 'Delete: remove the selection' }),
        h('li', { text: 'Shift+click, drag on the background: select several' }),
        h('li', { text: 'Right-drag or wheel: pan; Ctrl+wheel: zoom' }),
        h('li', { text: 'Ctrl+S: save' }),
      ),
    )
  }

  renderEdge(edge) {
    this.nodeId = null
    const s = edge.getSource()
    const t = edge.getTarget()
    clear(this.el).append(
      h('h2', { text: 'Edge' }),
      h('p', { text: `${s.cell} (${(s.port || '').replace(/^out:/, '')}) → ${t.cell || '?'} (${(t.port || '').replace(/^in:/, '')})` }),
      h('button', { type: 'button', testid: 'delete-selection', text: 'Delete edge', on: { click: () => this.canvas.removeSelected() } }),
    )
  }

  renderNode(id) {
    const data = this.canvas.nodeData(id)
    if (!data) {
      this.renderEmpty()
      return
    }
    this.nodeId = id
    this.renderedData = JSON.stringify(data)
    const kind = this.catalog.kind(data.kind)
    const form = h('form', { class: 'be-form', testid: 'properties-form', autocomplete: 'off', on: { submit: (e) => e.preventDefault() } })
    const header = h(
      'div',
      { class: 'be-form-head' },
      h('h2', { text: kind ? kind.title : data.kind }),
      h('div', { class: 'be-node-id' }, 'id ', h('code', { testid: 'selected-node-id', text: id }), ' · ', h('code', { text: data.kind })),
      kind ? h('p', { class: 'be-hint', text: kind.description }) : h('p', { class: 'be-error', text: `Unknown kind ${data.kind}` }),
    )
    this.nodeProblemsEl = h('ul', { class: 'be-node-problems', testid: 'selected-node-problems' })
    form.append(header, this.nodeProblemsEl)
    this.fields = new Map()
    if (kind) {
      for (const p of kind.params) {
        const applies = this.catalog.paramApplies(data, p)
        const set = data.params && data.params[p.name] !== undefined
        if (!applies && !set) continue
        form.append(this.field(data, kind, p, applies))
      }
    }
    clear(this.el).append(form)
    this.showProblems()
  }

  // value is a parameter's current value as the form shows it.
  value(data, kind, p) {
    const params = data.params || {}
    if (p.name === 'name' && this.catalog.isOperatorName(kind)) return params.name ?? data.name ?? ''
    return params[p.name]
  }

  field(data, kind, p, applies) {
    const id = `be-param-${p.name}`
    const label = h('label', { for: id, class: 'be-label' }, p.name, p.required ? h('span', { class: 'be-required', title: 'required', text: ' *' }) : null)
    const help = h('div', { class: 'be-help', text: p.description || '' })
    const problem = h('div', { class: 'be-field-problem', testid: `field-problem-${p.name}` })
    const wrap = h('div', { class: 'be-field', dataset: { param: p.name } }, label)
    if (!applies) wrap.append(h('div', { class: 'be-error', text: `Only for ${p.when.param} ${p.when.values.join(' or ')}: clear it.` }))
    const value = this.value(data, kind, p)
    let input
    switch (p.type) {
      case 'enum':
      case 'serde':
        input = this.select(id, p, value)
        break
      case 'expression':
        input = this.expression(id, p, value, wrap)
        break
      case 'branches':
        input = this.branches(p, value)
        break
      default:
        input = this.text(id, p, value)
    }
    wrap.append(input, help, problem)
    this.fields.set(p.name, { wrap, input, problem })
    return wrap
  }

  text(id, p, value) {
    const attrs = {
      id,
      type: 'text',
      testid: `param-${p.name}`,
      name: p.name,
      value: value === undefined || value === null ? '' : String(value),
      placeholder: placeholder(p),
      spellcheck: 'false',
    }
    if (p.type === 'int') attrs.inputmode = 'numeric'
    if (p.type === 'topic') attrs.list = 'be-topics'
    const input = h('input', attrs)
    if (p.type === 'topic') {
      const dl = document.getElementById('be-topics') || document.body.appendChild(h('datalist', { id: 'be-topics' }))
      input.addEventListener('focus', () => {
        clear(dl).append(...this.opts.topics().map((t) => h('option', { value: t })))
      })
    }
    const check = () => {
      const v = input.value.trim()
      let msg = ''
      if (p.type === 'duration' && v !== '' && !DURATION.test(v)) msg = 'a duration such as 10s, 1m30s or 1h'
      if (p.type === 'int' && v !== '' && !/^-?\d+$/.test(v)) msg = 'a whole number'
      input.classList.toggle('be-invalid', msg !== '')
      input.title = msg
    }
    const apply = debounce(() => this.setParam(p, convert(p, input.value)), 350)
    input.addEventListener('input', () => {
      check()
      apply()
    })
    input.addEventListener('change', () => apply.flush())
    check()
    return input
  }

  select(id, p, value) {
    const options = p.type === 'serde' ? (p.enum && p.enum.length ? p.enum : this.catalog.serdes) : p.enum || []
    const sel = h('select', { id, testid: `param-${p.name}`, name: p.name })
    const def = p.default !== undefined && p.default !== null ? `default: ${p.default}` : p.required ? 'choose…' : 'default'
    sel.append(h('option', { value: '', text: `(${def})` }))
    for (const o of options) sel.append(h('option', { value: o, text: o }))
    if (value !== undefined && value !== null && !options.includes(value)) sel.append(h('option', { value: String(value), text: `${value} (unknown)` }))
    sel.value = value === undefined || value === null ? '' : String(value)
    sel.addEventListener('change', () => {
      this.setParam(p, sel.value)
      // Conditions (a hopping window's advance) may show or hide fields.
      const focus = p.name
      this.renderNode(this.nodeId)
      const again = this.fields.get(focus)
      if (again) again.input.focus()
    })
    return sel
  }

  expression(id, p, value, wrap) {
    const ta = h('textarea', {
      id,
      testid: `param-${p.name}`,
      name: p.name,
      rows: '2',
      spellcheck: 'false',
      placeholder: placeholder(p),
      class: 'be-expr',
    })
    ta.value = value === undefined || value === null ? '' : String(value)
    const status = h('div', { class: 'be-expr-status', testid: `expr-status-${p.name}` })
    const vars = this.catalog.roles[p.expr]
    const hint = h('div', { class: 'be-vars', text: vars ? `${p.expr}: ${vars.length ? vars.join(', ') : 'no variables'}` : p.expr || '' })
    const box = h('div', { class: 'be-expr-box' }, ta, status, hint)
    const check = debounce(() => checkExpression(p.expr, ta.value, status, ta, () => this.showProblems()), 350)
    const apply = debounce(() => this.setParam(p, ta.value), 350)
    ta.addEventListener('input', () => {
      check()
      apply()
    })
    ta.addEventListener('change', () => apply.flush())
    if (ta.value.trim()) check()
    wrap.classList.add('be-field-expr')
    // The input itself for focus(): the textarea.
    box.focus = () => ta.focus()
    return box
  }

  branches(p, value) {
    const list = Array.isArray(value) ? clone(value) : []
    const box = h('div', { class: 'be-branches', testid: `param-${p.name}` })
    const render = () => {
      clear(box)
      list.forEach((b, i) => {
        const name = h('input', {
          type: 'text',
          testid: `branch-name-${i}`,
          value: b.name || '',
          placeholder: 'name (the output port)',
          spellcheck: 'false',
          'aria-label': `branch ${i + 1} name`,
        })
        const pred = h('textarea', {
          testid: `branch-predicate-${i}`,
          rows: '1',
          spellcheck: 'false',
          class: 'be-expr',
          placeholder: i === list.length - 1 ? 'empty: the default branch' : 'predicate, e.g. value.amount >= 100',
          'aria-label': `branch ${i + 1} predicate`,
        })
        pred.value = b.predicate || ''
        const status = h('div', { class: 'be-expr-status', testid: `branch-status-${i}` })
        const check = debounce(() => checkExpression('predicate', pred.value, status, pred, () => this.showProblems()), 350)
        name.addEventListener('change', () => {
          const old = list[i].name
          list[i].name = name.value.trim()
          this.setParam(p, clone(list), old && list[i].name ? { [old]: list[i].name } : {})
        })
        const apply = debounce(() => this.setParam(p, clone(list)), 350)
        pred.addEventListener('input', () => {
          list[i].predicate = pred.value
          check()
          apply()
        })
        pred.addEventListener('change', () => apply.flush())
        if (pred.value.trim()) check()
        const move = (d) => {
          const j = i + d
          if (j < 0 || j >= list.length) return
          ;[list[i], list[j]] = [list[j], list[i]]
          this.setParam(p, clone(list))
          render()
        }
        const remove = () => {
          list.splice(i, 1)
          this.setParam(p, clone(list))
          render()
        }
        box.append(
          h(
            'div',
            { class: 'be-branch' },
            h('div', { class: 'be-branch-row' }, name,
              h('button', { type: 'button', title: 'up', text: '↑', testid: `branch-up-${i}`, on: { click: () => move(-1) } }),
              h('button', { type: 'button', title: 'down', text: '↓', testid: `branch-down-${i}`, on: { click: () => move(1) } }),
              h('button', { type: 'button', title: 'remove', text: '×', testid: `branch-remove-${i}`, on: { click: remove } }),
            ),
            pred,
            status,
          ),
        )
      })
      box.append(
        h('button', {
          type: 'button',
          testid: 'branch-add',
          text: '+ branch',
          on: {
            click: () => {
              const names = new Set(list.map((b) => b.name))
              let n = list.length + 1
              while (names.has(`branch${n}`)) n++
              // A new branch goes before a default (last, no predicate).
              const last = list[list.length - 1]
              const at = last && !last.predicate ? list.length - 1 : list.length
              list.splice(at, 0, { name: `branch${n}`, predicate: '' })
              this.setParam(p, clone(list))
              render()
            },
          },
        }),
      )
    }
    render()
    box.focus = () => {
      const first = box.querySelector('input,textarea')
      if (first) first.focus()
    }
    return box
  }

  // setParam changes one parameter of the shown node (one undo step).
  setParam(p, value, renames) {
    const id = this.nodeId
    if (!id) return
    const data = this.canvas.nodeData(id)
    if (!data) return
    const kind = this.catalog.kind(data.kind)
    const params = clone(data.params || {})
    let name = data.name
    const unset = value === undefined || value === null || value === ''
    if (unset) delete params[p.name]
    else params[p.name] = value
    if (p.name === 'name' && this.catalog.isOperatorName(kind)) {
      // The node's name and its name parameter are the same thing.
      if (name) name = unset ? '' : value
    }
    // Parameters whose condition no longer holds are cleared.
    for (const q of kind ? kind.params : []) {
      if (q.when && params[q.name] !== undefined && !this.catalog.paramApplies({ ...data, params }, q)) delete params[q.name]
    }
    if (JSON.stringify(params) === JSON.stringify(data.params || {}) && name === data.name) return
    this.applying = true
    try {
      this.canvas.updateNode(id, { name, params }, renames)
    } finally {
      this.applying = false
    }
    this.renderedData = JSON.stringify(this.canvas.nodeData(id))
  }

  // setProblems keeps the design's problems; those of the shown node
  // are shown at its fields.
  setProblems(problems) {
    this.problems = problems || []
    this.showProblems()
  }

  // An expression's error shows once, at the expression (its live check,
  // which validation repeats): a problem of the field that says what one
  // of its expression checks says is not shown again under it.
  showProblems() {
    if (!this.nodeId || !this.fields) return
    const mine = this.problems.filter((p) => p.node === this.nodeId)
    for (const f of this.fields.values()) {
      f.problem.textContent = ''
      f.wrap.classList.remove('has-problem')
    }
    clear(this.nodeProblemsEl)
    for (const p of mine) {
      const f = p.param && this.fields.get(p.param)
      if (f) {
        f.wrap.classList.add('has-problem')
        if (shownByCheck(f.wrap, p.message)) continue
        f.problem.textContent = (f.problem.textContent ? f.problem.textContent + '; ' : '') + p.message
      } else {
        this.nodeProblemsEl.append(h('li', { text: (p.param ? `${p.param}: ` : '') + p.message }))
      }
    }
  }

  // focusParam puts the focus on a parameter's field.
  focusParam(name) {
    const f = this.fields && this.fields.get(name)
    if (!f) return false
    f.wrap.scrollIntoView({ block: 'nearest' })
    f.input.focus()
    return true
  }
}

function placeholder(p) {
  if (p.default !== undefined && p.default !== null && p.default !== '') return `default: ${typeof p.default === 'string' ? p.default : JSON.stringify(p.default)}`
  if (p.example) return `e.g. ${p.example}`
  return ''
}

function convert(p, raw) {
  const v = raw.trim()
  if (p.type === 'int' && /^-?\d+$/.test(v)) return Number(v)
  return p.type === 'expression' ? raw : v
}

let exprSeq = 0

// checkExpression asks the server whether source parses for role, says so
// in status and then calls done. A status showing an error keeps it in
// data-error as validation words it (the compiler's ExprError: "message
// (line:column)"), for shownByCheck.
async function checkExpression(role, source, status, input, done) {
  const seq = ++exprSeq
  status._seq = seq
  const show = (text, cls, ok, error) => {
    status.textContent = text
    status.className = 'be-expr-status' + cls
    if (ok === undefined) delete status.dataset.ok
    else status.dataset.ok = ok
    if (error) status.dataset.error = error
    else delete status.dataset.error
    if (done) done()
  }
  if (!source.trim()) {
    input.classList.remove('be-invalid')
    show('', '')
    return
  }
  try {
    const res = await api('POST', '/api/expression', { role, source })
    if (status._seq !== seq) return
    if (res && res.ok) {
      input.classList.remove('be-invalid')
      show('✓ valid', ' be-ok', 'true')
    } else {
      const e = (res && res.error) || {}
      const where = e.line ? `line ${e.line}, column ${e.column}: ` : ''
      const message = e.message || 'invalid'
      input.classList.add('be-invalid')
      show(where + message, ' be-bad', 'false', e.line ? `${message} (${e.line}:${e.column})` : message)
    }
  } catch (err) {
    if (status._seq !== seq) return
    show(`cannot check: ${err.message}`, '')
  }
}

// shownByCheck says whether an expression check in a field shows the
// problem already: the problem is its error, or ends with it (a branch's
// predicate: 'branch "b": predicate: <error>').
function shownByCheck(field, message) {
  for (const s of field.querySelectorAll('.be-expr-status[data-ok="false"]')) {
    const e = s.dataset.error
    if (e && (message === e || message.endsWith(': ' + e))) return true
  }
  return false
}

export { branchesOf }
